'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { deepMerge } = require('../lib/deep-merge');

test('merges nested objects', () => {
  const merged = deepMerge({ a: 1, db: { host: 'x', port: 1 } }, { db: { port: 2 } });
  assert.deepEqual(merged, { a: 1, db: { host: 'x', port: 2 } });
});

test('arrays replace arrays', () => {
  assert.deepEqual(deepMerge({ tags: [1, 2, 3] }, { tags: [9] }), { tags: [9] });
});
