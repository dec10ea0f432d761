// A minimal JSX runtime, so that the components compile and run with
// nothing but tsc and node (the sandbox this was written in has no npm
// registry, hence no react package). The components use only what React
// offers too: function components, props, children, keys and onClick-style
// handlers. To move to real React, install react and react-dom, set
// "jsx": "react-jsx" in tsconfig.json, and replace src/main.tsx's mount with
// createRoot(...).render(<TodoApp />) and a useReducer(reducer, initialState).

export type Child = VNode | string | number | boolean | null | undefined | Child[];
export type Props = { [key: string]: unknown; children?: Child[] };
export type Component<P> = (props: P & { children?: Child[] }) => VNode;

export interface VNode {
  tag: string | typeof Fragment;
  props: Props;
  children: Child[];
}

// A component, as TypeScript 6 wants of a fragment factory: h calls it,
// and the node it returns is recognised by its tag.
export function Fragment(props: { children?: Child[] }): VNode {
  return { tag: Fragment, props: {}, children: props.children ?? [] };
}

export function h(tag: string | typeof Fragment | Component<any>, props: Props | null, ...children: Child[]): VNode {
  if (typeof tag === "function") return tag({ ...(props ?? {}), children });
  return { tag, props: props ?? {}, children };
}

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => escapes[c]);
}

// renderToString renders a tree to HTML, leaving out event handlers, as
// react-dom/server does.
export function renderToString(node: Child): string {
  if (node === null || node === undefined || typeof node === "boolean") return "";
  if (Array.isArray(node)) return node.map(renderToString).join("");
  if (typeof node === "string" || typeof node === "number") return escape(String(node));
  const inner = node.children.map(renderToString).join("");
  if (node.tag === Fragment) return inner;
  let attrs = "";
  for (const [name, value] of Object.entries(node.props)) {
    if (name === "children" || name === "key" || name.startsWith("on") || value === false || value == null) continue;
    const attr = name === "className" ? "class" : name;
    attrs += value === true ? ` ${attr}` : ` ${attr}="${escape(String(value))}"`;
  }
  return `<${String(node.tag)}${attrs}>${inner}</${String(node.tag)}>`;
}

// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace h {
  namespace JSX {
    type Element = VNode;
    interface IntrinsicAttributes {
      key?: string | number;
    }
    interface IntrinsicElements {
      [tag: string]: { [attr: string]: unknown };
    }
  }
}
