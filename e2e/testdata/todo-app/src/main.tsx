// Browser entry: keeps the state, re-renders on every dispatch, and routes
// clicks and the form to the handlers the components declared.
import { h, Child, VNode, Fragment } from "./jsx.js";
import { TodoApp } from "./App.js";
import { Action, State, initialState, reducer } from "./todos.js";

function toDOM(node: Child): Node[] {
  if (node === null || node === undefined || typeof node === "boolean") return [];
  if (Array.isArray(node)) return node.flatMap(toDOM);
  if (typeof node === "string" || typeof node === "number") return [document.createTextNode(String(node))];
  const v = node as VNode;
  const kids = v.children.flatMap(toDOM);
  if (v.tag === Fragment) return kids;
  const el = document.createElement(String(v.tag));
  for (const [name, value] of Object.entries(v.props)) {
    if (name === "children" || name === "key" || value === false || value == null) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2).toLowerCase(), value as EventListener);
    } else if (name === "checked") {
      (el as HTMLInputElement).checked = Boolean(value);
    } else {
      el.setAttribute(name === "className" ? "class" : name, value === true ? "" : String(value));
    }
  }
  el.append(...kids);
  return [el];
}

export function mount(root: HTMLElement): void {
  let state: State = initialState;
  const dispatch = (a: Action) => {
    state = reducer(state, a);
    render();
  };
  const render = () => {
    root.replaceChildren(...toDOM(<TodoApp state={state} dispatch={dispatch} />));
    const form = root.querySelector<HTMLFormElement>("#new-todo");
    form?.addEventListener("submit", (e) => {
      e.preventDefault();
      const input = form.elements.namedItem("text") as HTMLInputElement;
      dispatch({ type: "add", text: input.value });
    });
  };
  render();
}

if (typeof document !== "undefined") {
  const root = document.getElementById("root");
  if (root) mount(root);
}
