import { test } from 'node:test';
import assert from 'node:assert/strict';
import { add{{.Class}}, toggle{{.Class}}, remove{{.Class}}, remaining } from './{{.Nouns}}.js';

test('adds a {{.Noun}} with a trimmed title', () => {
  const list = add{{.Class}}([], '  Write the README  ');
  assert.equal(list.length, 1);
  assert.equal(list[0].title, 'Write the README');
  assert.equal(list[0].done, false);
});

test('ignores a blank title', () => {
  assert.deepEqual(add{{.Class}}([], '   '), []);
});

test('toggles a {{.Noun}} and counts what remains', () => {
  let list = add{{.Class}}(add{{.Class}}([], 'one'), 'two');
  list = toggle{{.Class}}(list, list[0].id);
  assert.equal(list[0].done, true);
  assert.equal(remaining(list), 1);
});

test('removes a {{.Noun}}', () => {
  const list = add{{.Class}}([], 'gone soon');
  assert.deepEqual(remove{{.Class}}(list, list[0].id), []);
});
