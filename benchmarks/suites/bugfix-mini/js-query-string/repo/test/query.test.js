'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseQuery, stringifyQuery } = require('../src/query');

test('parses pairs', () => {
  assert.deepEqual(parseQuery('?a=1&b=two'), { a: '1', b: 'two' });
});

test('decodes percent escapes', () => {
  assert.deepEqual(parseQuery('name=J%C3%B6rg'), { name: 'Jörg' });
});

test('stringifies', () => {
  assert.equal(stringifyQuery({ a: 1, b: 'x y' }), 'a=1&b=x%20y');
});
