'use strict';

function checkPageSize(pageSize) {
  if (!Number.isInteger(pageSize) || pageSize < 1) {
    throw new RangeError(`pageSize must be an integer >= 1, got ${pageSize}`);
  }
}

/**
 * Number of pages needed for `total` items.
 * @param {number} total
 * @param {number} pageSize
 */
function pageCount(total, pageSize) {
  checkPageSize(pageSize);
  return Math.floor(total / pageSize);
}

/**
 * Splits `items` into pages of `pageSize` items.
 * @template T
 * @param {T[]} items
 * @param {number} pageSize
 * @returns {T[][]}
 */
function paginate(items, pageSize) {
  const pages = [];
  for (let i = 0; i < pageCount(items.length, pageSize); i++) {
    pages.push(items.slice(i * pageSize, (i + 1) * pageSize));
  }
  return pages;
}

module.exports = { pageCount, paginate };
