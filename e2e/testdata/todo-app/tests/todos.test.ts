import { test } from "node:test";
import assert from "node:assert/strict";
import { State, initialState, reducer, remaining, visible } from "../src/todos.js";

function apply(...actions: Parameters<typeof reducer>[1][]): State {
  return actions.reduce(reducer, initialState);
}

test("add appends a trimmed todo with a fresh id and ignores blank text", () => {
  const s = apply({ type: "add", text: "  buy milk " }, { type: "add", text: "   " }, { type: "add", text: "walk dog" });
  assert.deepEqual(s.todos, [
    { id: 1, text: "buy milk", done: false },
    { id: 2, text: "walk dog", done: false },
  ]);
  assert.equal(s.nextId, 3);
});

test("toggle flips one todo and leaves the previous state untouched", () => {
  const before = apply({ type: "add", text: "a" }, { type: "add", text: "b" });
  const after = reducer(before, { type: "toggle", id: 2 });
  assert.deepEqual(after.todos.map((t) => t.done), [false, true]);
  assert.deepEqual(before.todos.map((t) => t.done), [false, false]);
  assert.equal(remaining(after), 1);
});

test("remove, edit and clearDone", () => {
  let s = apply({ type: "add", text: "a" }, { type: "add", text: "b" }, { type: "add", text: "c" });
  s = reducer(s, { type: "edit", id: 1, text: " A " });
  s = reducer(s, { type: "remove", id: 2 });
  s = reducer(s, { type: "toggle", id: 3 });
  assert.deepEqual(s.todos.map((t) => t.text), ["A", "c"]);
  s = reducer(s, { type: "clearDone" });
  assert.deepEqual(s.todos.map((t) => t.text), ["A"]);
  s = reducer(s, { type: "edit", id: 1, text: "  " });
  assert.deepEqual(s.todos, []);
});

test("filters choose the visible todos", () => {
  let s = apply({ type: "add", text: "a" }, { type: "add", text: "b" }, { type: "toggle", id: 1 });
  assert.deepEqual(visible(s).map((t) => t.text), ["a", "b"]);
  s = reducer(s, { type: "filter", filter: "active" });
  assert.deepEqual(visible(s).map((t) => t.text), ["b"]);
  s = reducer(s, { type: "filter", filter: "done" });
  assert.deepEqual(visible(s).map((t) => t.text), ["a"]);
});
