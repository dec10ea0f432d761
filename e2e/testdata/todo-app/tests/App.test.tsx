import { test } from "node:test";
import assert from "node:assert/strict";
import { h, renderToString } from "../src/jsx.js";
import { TodoApp } from "../src/App.js";
import { Action, initialState, reducer } from "../src/todos.js";

test("the app renders its todos, the count and the filters", () => {
  const state = [
    { type: "add", text: "write tests" },
    { type: "add", text: "ship <it> & relax" },
    { type: "toggle", id: 1 },
  ].reduce((s, a) => reducer(s, a as Action), initialState);
  const html = renderToString(<TodoApp state={state} dispatch={() => {}} />);
  assert.match(html, /<li class="todo done" data-id="1">.*write tests/);
  assert.match(html, /ship &lt;it&gt; &amp; relax/);
  assert.match(html, /1 item left/);
  assert.match(html, /<button class="filter selected">all<\/button>/);
  assert.doesNotMatch(html, /onClick/);
});

test("handlers dispatch the actions the reducer understands", () => {
  const seen: Action[] = [];
  const state = reducer(initialState, { type: "add", text: "x" });
  const tree = <TodoApp state={state} dispatch={(a) => seen.push(a)} />;
  // Walk the tree and press every button, as a user would.
  const press = (n: unknown): void => {
    if (Array.isArray(n)) return n.forEach(press);
    if (n && typeof n === "object" && "props" in n) {
      const v = n as { props: { onClick?: () => void }; children: unknown[] };
      v.props.onClick?.();
      v.children.forEach(press);
    }
  };
  press(tree);
  assert.deepEqual(seen.map((a) => a.type), ["toggle", "remove", "filter", "filter", "filter", "clearDone"]);
});
