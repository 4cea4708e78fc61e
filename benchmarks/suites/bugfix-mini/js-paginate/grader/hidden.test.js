'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { pageCount, paginate } = require(
  path.join(process.env.WORKSPACE || '/workspace', 'src/paginate.js'),
);

test('partial last page', () => {
  assert.deepEqual(paginate([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  assert.equal(pageCount(45, 20), 3);
  const items = Array.from({ length: 45 }, (_, i) => i);
  const pages = paginate(items, 20);
  assert.equal(pages.length, 3);
  assert.deepEqual(pages.flat(), items);
});

test('fewer items than a page', () => {
  assert.deepEqual(paginate(['a'], 10), [['a']]);
  assert.equal(pageCount(1, 10), 1);
});

test('empty and exact', () => {
  assert.deepEqual(paginate([], 3), []);
  assert.equal(pageCount(0, 3), 0);
  assert.equal(pageCount(40, 20), 2);
});

test('bad page sizes', () => {
  assert.throws(() => paginate([1], 0), RangeError);
  assert.throws(() => pageCount(3, 1.5), RangeError);
});
