// The workspace panel: a lazily loaded file tree and a file viewer.
import { call, download, filesURL } from './api.js';
import { h, bytes } from './util.js';

const RETRY_MS = 2000;

export function filesPanel(jobID) {
  const source = h('span', { class: 'muted small', role: 'status' });
  const tree = h('ul', { class: 'tree', 'aria-label': 'Workspace files' });
  const viewer = h('div', { class: 'viewer', 'aria-live': 'polite' });
  const refreshBtn = h('button', { type: 'button', onclick: () => refresh() }, 'Refresh');
  const el = h('section', { class: 'card files', 'aria-labelledby': 'files-h' },
    h('div', { class: 'section-head' }, h('h2', { id: 'files-h' }, 'Workspace'), source, refreshBtn),
    tree, viewer);
  let objectURL = '';

  // list fills into with the entries at path, unless current() says a
  // newer listing has taken its place meanwhile.
  async function list(path, into, current = () => true) {
    const l = await call(filesURL(jobID, path));
    if (!current()) return;
    source.textContent = l.source === 'sandbox' ? 'live from the sandbox' : 'from the archived workspace';
    into.replaceChildren(...l.entries.map(entry));
    if (!l.entries.length) into.append(h('li', { class: 'muted' }, 'empty'));
    if (l.truncated) into.append(h('li', { class: 'muted' }, 'more entries not shown'));
  }

  function entry(e) {
    if (e.type === 'dir') {
      const children = h('ul', { hidden: true });
      const btn = h('button', { type: 'button', class: 'tree-dir', 'aria-expanded': 'false', dataset: { path: e.path } }, e.name + '/');
      btn.addEventListener('click', async () => {
        const open = btn.getAttribute('aria-expanded') === 'true';
        btn.setAttribute('aria-expanded', String(!open));
        children.hidden = open;
        if (!open) {
          children.replaceChildren(h('li', { class: 'muted' }, 'loading…'));
          try {
            await list(e.path, children);
          } catch (err) {
            children.replaceChildren(h('li', { class: 'error' }, err.message));
          }
        }
      });
      return h('li', {}, btn, children);
    }
    if (e.type === 'symlink') {
      return h('li', { class: 'muted' }, `${e.name} → ${e.link_target ?? ''}`);
    }
    const btn = h('button', { type: 'button', class: 'tree-file', dataset: { path: e.path }, onclick: () => view(e) },
      e.name, h('span', { class: 'muted small' }, ` ${bytes(e.size)}`));
    return h('li', {}, btn);
  }

  async function view(e) {
    if (objectURL) URL.revokeObjectURL(objectURL);
    objectURL = '';
    const dl = h('button', { type: 'button', onclick: () => download(filesURL(jobID, e.path) + '?download=1', e.name) }, 'Download');
    const body = h('div', { class: 'viewer-body' }, h('p', { class: 'muted' }, 'loading…'));
    viewer.replaceChildren(h('div', { class: 'section-head' }, h('h3', { id: 'viewer-h' }, e.path), dl), body);
    try {
      const resp = await call(filesURL(jobID, e.path), { raw: true });
      const type = resp.headers.get('Content-Type') || '';
      if (type.startsWith('image/')) {
        objectURL = URL.createObjectURL(await resp.blob());
        body.replaceChildren(h('img', { src: objectURL, alt: e.path, class: 'file-image' }));
      } else if (type.startsWith('text/') || type.startsWith('application/json')) {
        body.replaceChildren(h('pre', { class: 'file-text', tabindex: '0', 'aria-labelledby': 'viewer-h' }, await resp.text()));
      } else {
        resp.body?.cancel();
        body.replaceChildren(h('p', {}, `Binary file (${type || 'unknown type'}, ${bytes(e.size)}): use Download.`));
      }
    } catch (err) {
      body.replaceChildren(h('p', { class: 'error' }, err.message));
    }
  }

  // A running job's page opens as soon as the job starts, often before its
  // sandbox (or the daemon in it) answers: the API says 503, and the tree
  // asks again by itself rather than keep that passing error.
  let retry = null;
  let stopped = false;
  // The live listing and the archive's (once the job ends) may answer out
  // of order; the tree keeps the last one asked for.
  let gen = 0;

  async function refresh() {
    clearTimeout(retry);
    retry = null;
    const my = ++gen;
    const current = () => my === gen;
    try {
      await list('', tree, current);
    } catch (err) {
      if (!current()) return;
      source.textContent = '';
      tree.replaceChildren(h('li', { class: 'muted' }, err.message));
      if (err.status === 503 && !stopped) retry = setTimeout(refresh, RETRY_MS);
    }
  }

  function stop() {
    stopped = true;
    clearTimeout(retry);
  }

  return { el, refresh, stop };
}
