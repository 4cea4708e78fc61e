'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { pageCount, paginate } = require('../src/paginate');

test('full pages', () => {
  assert.deepEqual(paginate([1, 2, 3, 4], 2), [
    [1, 2],
    [3, 4],
  ]);
  assert.equal(pageCount(40, 20), 2);
});

test('rejects a bad page size', () => {
  assert.throws(() => paginate([1], 0), RangeError);
});
