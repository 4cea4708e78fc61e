'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { slugify } = require(path.join(process.env.WORKSPACE || '/workspace', 'src/slugify.js'));

test('joins words with a single dash', () => {
  assert.equal(slugify('release notes 2024'), 'release-notes-2024');
  assert.equal(slugify('Hello,  World!'), 'hello-world');
});

test('no leading or trailing dashes', () => {
  assert.equal(slugify('  C++ & Rust  '), 'c-rust');
  assert.equal(slugify('--already-slugged--'), 'already-slugged');
});

test('accents', () => {
  assert.equal(slugify('Crème Brûlée'), 'creme-brulee');
});

test('nothing left', () => {
  assert.equal(slugify('!!!'), '');
  assert.equal(slugify(''), '');
});
