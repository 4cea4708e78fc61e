'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { deepMerge } = require(
  path.join(process.env.WORKSPACE || '/workspace', 'lib/deep-merge.js'),
);

test('merges nested objects', () => {
  const merged = deepMerge({ a: 1, db: { host: 'x', port: 1 } }, { db: { port: 2 } });
  assert.deepEqual(merged, { a: 1, db: { host: 'x', port: 2 } });
});

test('leaves the target unchanged', () => {
  const defaults = { level: 'info', db: { host: 'localhost', port: 5432 }, tags: ['a'] };
  const snapshot = JSON.parse(JSON.stringify(defaults));
  const merged = deepMerge(defaults, { level: 'debug', db: { port: 1 }, tags: ['b'] });
  assert.deepEqual(defaults, snapshot);
  assert.deepEqual(merged, { level: 'debug', db: { host: 'localhost', port: 1 }, tags: ['b'] });
  assert.notEqual(merged, defaults);
  assert.notEqual(merged.db, defaults.db);
});

test('does not share structure with the source', () => {
  const source = { db: { opts: { ssl: true } }, list: [{ x: 1 }] };
  const merged = deepMerge({}, source);
  merged.db.opts.ssl = false;
  merged.list[0].x = 2;
  assert.equal(source.db.opts.ssl, true);
  assert.equal(source.list[0].x, 1);
});

test('leaves the source unchanged', () => {
  const source = { db: { port: 2 } };
  deepMerge({ db: { host: 'h' } }, source);
  assert.deepEqual(source, { db: { port: 2 } });
});
