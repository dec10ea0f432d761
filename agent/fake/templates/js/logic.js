// Pure functions over a list of {{.Nouns}}: the UI stays thin and the logic is
// tested without a browser. Each function returns a new list.
let nextId = 1;

export function add{{.Class}}({{.Nouns}}, title) {
  const t = String(title ?? '').trim();
  if (!t) return {{.Nouns}};
  return [...{{.Nouns}}, { id: nextId++, title: t, done: false }];
}

export function toggle{{.Class}}({{.Nouns}}, id) {
  return {{.Nouns}}.map((x) => (x.id === id ? { ...x, done: !x.done } : x));
}

export function remove{{.Class}}({{.Nouns}}, id) {
  return {{.Nouns}}.filter((x) => x.id !== id);
}

export function remaining({{.Nouns}}) {
  return {{.Nouns}}.filter((x) => !x.done).length;
}
