// Rendering of a job's events as a timeline.
import { h, bytes } from './util.js';
import { call, filesURL } from './api.js';
import { renderPause } from './pause.js';

const LONG = 4000; // characters shown before "show all"

function time(ev) {
  const d = new Date(ev.time);
  return h('time', { datetime: ev.time, title: d.toLocaleString() }, d.toLocaleTimeString());
}

// text shows long text folded: the start, and the rest behind a disclosure.
function text(s, cls = '') {
  s = s ?? '';
  if (s.length <= LONG) return h('pre', { class: cls }, s);
  return h('div', {},
    h('pre', { class: cls }, s.slice(0, LONG) + '…'),
    h('details', {}, h('summary', {}, `show all ${s.length.toLocaleString()} characters`), h('pre', { class: cls }, s)));
}

// At most this many screenshots load at once: a long desktop job has
// hundreds, each a file read on the server (from the archive once the job
// has ended), and a page opened on it should not ask for all at the same
// moment.
const SHOTS_AT_ONCE = 2;
let shotsLoading = 0;
const shotQueue = [];

function nextShot() {
  while (shotsLoading < SHOTS_AT_ONCE && shotQueue.length) {
    const load = shotQueue.shift();
    shotsLoading++;
    load().finally(() => {
      shotsLoading--;
      nextShot();
    });
  }
}

// shot is an image a tool saved in the job's workspace (an ImageRef),
// fetched with the token through the files route. Its path comes from the
// agent: one that could climb out of the files route is not fetched.
function shot(jobID, img, alt) {
  const path = typeof img?.path === 'string' ? img.path : '';
  const parts = path.split('/');
  if (!jobID || !path || parts.some((p) => p === '' || p === '.' || p === '..')) return null;
  const el = h('img', { class: 'shot', alt, loading: 'lazy' });
  if (img.width > 0 && img.height > 0) Object.assign(el, { width: img.width, height: img.height });
  shotQueue.push(() => call(filesURL(jobID, path), { raw: true }).then(async (resp) => {
    if (!(resp.headers.get('Content-Type') || '').startsWith('image/')) {
      resp.body?.cancel();
      throw new Error('not an image');
    }
    el.src = URL.createObjectURL(await resp.blob());
    el.addEventListener('load', () => URL.revokeObjectURL(el.src), { once: true });
  }).catch((err) => el.replaceWith(h('p', { class: 'muted small' }, `${path}: ${err.message}`))));
  nextShot();
  return el;
}

function toolArgs(name, input) {
  if (input === undefined || input === null) return null;
  if (typeof input !== 'object') return text(String(input), 'args');
  const { file_text: fileText, ...rest } = input;
  const head = name === 'bash' && typeof input.command === 'string' && Object.keys(input).length === 1
    ? h('pre', { class: 'args cmd' }, '$ ' + input.command)
    : h('pre', { class: 'args' }, JSON.stringify(rest, null, 2));
  if (typeof fileText !== 'string') return head;
  return h('div', {}, head, h('details', {}, h('summary', {}, `file_text (${fileText.split('\n').length} lines)`), text(fileText)));
}

// render returns the list item of one event, or null for events the
// timeline does not show (usage: the header sums it up).
export function render(ev) {
  const d = ev.data ?? {};
  const item = (label, ...body) => h('li', { class: `event event-${ev.type}`, dataset: { seq: ev.seq, type: ev.type } },
    h('div', { class: 'event-head' }, h('span', { class: 'event-label' }, label), time(ev)), ...body);
  switch (ev.type) {
    case 'status':
      return item('status', h('p', {}, `Job is ${d.status}`, d.error ? `: ${d.error}` : ''));
    case 'user_message':
      return item(d.from ? `message from ${d.from}` : 'message', text(d.text, 'prose'));
    case 'log':
      // The note of a delivered message carries its text again, for the
      // model: shown once, as the user_message.
      if (d.kind === 'message_delivered') return item('delivered', h('p', { class: 'muted' }, `The agent received the message of event ${d.seq}.`));
      if (d.kind === 'ask_user') return item('question', text(d.question, 'prose'));
      return item(d.level === 'error' || d.level === 'warn' ? `log (${d.level})` : 'log', h('p', {}, d.message ?? ''));
    case 'model': {
      const calls = Array.isArray(d.tool_calls) ? d.tool_calls : [];
      if (!d.text && !calls.length) return null;
      return item('model', d.text ? text(d.text, 'prose') : null,
        calls.length ? h('p', { class: 'muted' }, 'calls: ' + calls.map((c) => c.name).join(', ')) : null);
    }
    case 'tool_call':
      return item('tool call', h('p', {}, h('code', { class: 'tool-name' }, d.name ?? '?')), toolArgs(d.name, d.input));
    case 'observation': {
      const imgs = (Array.isArray(d.images) ? d.images : [])
        .map((img, i) => shot(ev.job_id, img, `screenshot ${i + 1} from ${d.name ?? 'the tool'}`)).filter(Boolean);
      return item(d.is_error ? 'tool error' : 'output',
        d.output ? text(d.output, d.is_error ? 'error' : '') : null, imgs);
    }
    case 'error':
      return item('error', h('p', { class: 'error' }, d.message ?? JSON.stringify(d)));
    case 'condensation':
      return item('memory', h('p', {}, 'Older steps were summarized to fit the model\'s context.'),
        d.summary ? h('details', {}, h('summary', {}, 'summary'), text(d.summary, 'prose')) : null);
    case 'artifact':
      return item('archive', h('p', {}, `Workspace archived (${bytes(d.size ?? 0)}${d.format ? `, ${d.format}` : ''}).`));
    case 'summary':
      return item('summary', text(d.summary ?? '', 'prose'));
    case 'paused':
    case 'resumed':
      return item(ev.type, renderPause(ev));
    case 'usage':
      return null;
    default:
      return item(ev.type, text(JSON.stringify(d, null, 2)));
  }
}
