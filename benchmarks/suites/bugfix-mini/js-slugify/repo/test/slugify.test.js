'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { slugify } = require('../src/slugify');

test('lower-cases single words', () => {
  assert.equal(slugify('Hello'), 'hello');
});

test('joins words with a dash', () => {
  assert.equal(slugify('release notes 2024'), 'release-notes-2024');
});

test('removes accents', () => {
  assert.equal(slugify('Crème'), 'creme');
});
