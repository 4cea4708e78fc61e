'use strict';

/**
 * Turns a title into a URL slug: lower case ASCII letters and digits separated by dashes.
 * @param {string} title
 * @returns {string}
 */
function slugify(title) {
  return String(title)
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '-');
}

module.exports = { slugify };
