// The changes panel: the job's diff (GET /v1/jobs/{id}/diff), file by file.
// Every line of it is workspace text: it is only ever set as text nodes.
import { call, download, jobURL } from './api.js';
import { h } from './util.js';

const RETRY_MS = 2000;
const OPEN_LINES = 400; // longer files start folded

// parseDiff splits a git diff into files: {path, kind, header, lines,
// added, removed}.
export function parseDiff(text) {
  const files = [];
  let f = null;
  let inHeader = false;
  const all = text.split('\n');
  if (all.at(-1) === '') all.pop(); // the diff's last newline ends a line, it does not start one
  for (const line of all) {
    if (line.startsWith('diff --git ')) {
      f = { path: pathOf(line), kind: 'modified', header: [line], lines: [], added: 0, removed: 0 };
      files.push(f);
      inHeader = true;
      continue;
    }
    if (!f) continue;
    if (inHeader && !line.startsWith('@@')) {
      if (line.startsWith('new file mode')) f.kind = 'added';
      else if (line.startsWith('deleted file mode')) f.kind = 'deleted';
      else if (line.startsWith('rename to ')) { f.kind = 'renamed'; f.path = unquote(line.slice(10)); }
      else if (line.startsWith('rename from ')) f.from = unquote(line.slice(12));
      else if (line === 'GIT binary patch' || line.startsWith('Binary files ')) f.binary = true;
      if (f.binary && line !== 'GIT binary patch' && !line.startsWith('Binary files ')) continue; // the patch's encoded data
      f.header.push(line);
      continue;
    }
    inHeader = false;
    if (line.startsWith('+')) f.added++;
    else if (line.startsWith('-')) f.removed++;
    f.lines.push(line);
  }
  return files;
}

const IGNORED = 'drydock: not shown, ignored by .gitignore: ';

// ignoredPaths reads the lines before the first file that name what the
// workspace's ignore rules left out of the diff (as git quotes them).
export function ignoredPaths(text) {
  const paths = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) break;
    if (line.startsWith(IGNORED)) paths.push(line.slice(IGNORED.length));
  }
  return paths;
}

function pathOf(line) {
  // "diff --git a/x b/x": the b/ side, which is the path after the change;
  // git quotes a name with unusual bytes: "b/na\303\257ve".
  const q = line.lastIndexOf(' "b/');
  if (q >= 0) return unquote(line.slice(q + 1)).slice(2);
  const i = line.lastIndexOf(' b/');
  return i >= 0 ? line.slice(i + 3) : line.slice(11);
}

const ESCAPES = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '"': 34, '\\': 92 };

// unquote undoes git's C-style quoting of a path (octal bytes of UTF-8).
function unquote(s) {
  if (!(s.length >= 2 && s.startsWith('"') && s.endsWith('"'))) return s;
  const body = s.slice(1, -1);
  const bytes = [];
  const enc = new TextEncoder();
  for (let i = 0; i < body.length; i++) {
    if (body[i] !== '\\') {
      bytes.push(...enc.encode(body[i]));
      continue;
    }
    const oct = body.slice(i + 1, i + 4);
    if (/^[0-7]{3}$/.test(oct)) {
      bytes.push(parseInt(oct, 8));
      i += 3;
    } else {
      bytes.push(ESCAPES[body[i + 1]] ?? body.charCodeAt(i + 1));
      i += 1;
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

export function diffPanel(jobID) {
  const state = h('span', { class: 'muted small', role: 'status' });
  const list = h('div', { class: 'diff-files' });
  const refreshBtn = h('button', { type: 'button', onclick: () => refresh() }, 'Refresh');
  const saveBtn = h('button', { type: 'button', onclick: () => download(`${jobURL(jobID)}/diff`, `${jobID}.diff`) }, 'Download .diff');
  const el = h('section', { class: 'card changes', id: 'changes', 'aria-labelledby': 'changes-h' },
    h('div', { class: 'section-head' }, h('h2', { id: 'changes-h' }, 'Changes'), state, refreshBtn, saveBtn),
    list);
  let retry = null;

  async function refresh() {
    clearTimeout(retry);
    state.textContent = 'loading…';
    try {
      const resp = await call(`${jobURL(jobID)}/diff`, { raw: true, extraHeaders: { Accept: 'text/x-diff' } });
      const text = await resp.text();
      const files = parseDiff(text);
      list.replaceChildren(...files.map(fileView));
      const ignored = ignoredPaths(text);
      if (ignored.length) {
        list.append(h('details', { class: 'diff-ignored' },
          h('summary', { class: 'muted small' }, `Not shown: ${ignored.length} path${ignored.length === 1 ? '' : 's'} ignored by .gitignore`),
          h('ul', {}, ...ignored.map((p) => h('li', {}, h('code', {}, p))))));
      }
      const added = files.reduce((n, f) => n + f.added, 0);
      const removed = files.reduce((n, f) => n + f.removed, 0);
      state.textContent = files.length
        ? `${files.length} file${files.length === 1 ? '' : 's'} changed, +${added} −${removed}`
        : 'no changes';
      if (resp.headers.get('Drydock-Diff-Truncated') === 'true') {
        list.append(h('p', { class: 'muted' }, 'The diff is larger than the server shows; download the archive for the whole workspace.'));
      }
    } catch (err) {
      // 409 while the sandbox records its starting point; 503 while it starts.
      if (err.status === 409 || err.status === 503) {
        state.textContent = 'waiting for the job\'s sandbox…';
        retry = setTimeout(refresh, RETRY_MS);
        return;
      }
      state.textContent = '';
      list.replaceChildren(h('p', { class: 'error' }, err.message));
    }
  }

  function fileView(f) {
    const label = f.kind === 'renamed' ? `${f.from} → ${f.path}` : f.path;
    const counts = f.binary ? 'binary' : `+${f.added} −${f.removed}`;
    const pre = h('pre', { class: 'diff' });
    const fill = () => {
      for (const line of f.lines) {
        let cls = '';
        if (line.startsWith('@@')) cls = 'diff-hunk';
        else if (line.startsWith('+')) cls = 'diff-add';
        else if (line.startsWith('-')) cls = 'diff-del';
        pre.append(h('span', { class: cls }, line + '\n'));
      }
      if (f.binary) pre.append(h('span', { class: 'muted' }, 'Binary file: download the archive to see it.\n'));
    };
    const open = f.lines.length <= OPEN_LINES;
    const el = h('details', { class: 'diff-file', open, dataset: { path: f.path, kind: f.kind } },
      h('summary', {}, h('span', { class: `diff-kind diff-${f.kind}` }, f.kind), ' ', h('code', {}, label), ' ',
        h('span', { class: 'muted small' }, counts)),
      pre);
    // A long file's lines become elements only when someone opens it.
    if (open) fill();
    else el.addEventListener('toggle', () => { if (el.open && !pre.firstChild) fill(); });
    return el;
  }

  return { el, refresh, stop: () => clearTimeout(retry) };
}
