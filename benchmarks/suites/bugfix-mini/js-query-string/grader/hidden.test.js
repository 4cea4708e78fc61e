'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { parseQuery, stringifyQuery } = require(
  path.join(process.env.WORKSPACE || '/workspace', 'src/query.js'),
);

test('values keep their = signs', () => {
  assert.deepEqual(parseQuery('token=abc==&x=1'), { token: 'abc==', x: '1' });
  assert.deepEqual(parseQuery('expr=a=b=c'), { expr: 'a=b=c' });
});

test('plus is a space', () => {
  assert.deepEqual(parseQuery('q=a+b&full+name=Ada+Lovelace'), {
    q: 'a b',
    'full name': 'Ada Lovelace',
  });
  assert.deepEqual(parseQuery('plus=%2B'), { plus: '+' });
});

test('keys without values and repeated keys', () => {
  assert.deepEqual(parseQuery('flag&a=1&a=2'), { flag: '', a: '2' });
});

test('round trip', () => {
  const params = { token: 'abc==', q: 'a b+c', e: 'x&y=z' };
  assert.deepEqual(parseQuery(stringifyQuery(params)), params);
});
