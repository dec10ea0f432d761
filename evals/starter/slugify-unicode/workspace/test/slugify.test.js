import test from 'node:test';
import assert from 'node:assert/strict';
import { slugify } from '../slugify.js';

test('simple titles', () => {
  assert.equal(slugify('Hello World'), 'hello-world');
});

test('accents are kept as their base letter', () => {
  assert.equal(slugify('Crème Brûlée'), 'creme-brulee');
});

test('runs of spaces and punctuation become one dash, none at the ends', () => {
  assert.equal(slugify('  Rock & Roll -- 2024!  '), 'rock-roll-2024');
});
