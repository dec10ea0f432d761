// The HTTP API as the UI uses it: the token from localStorage on every call,
// errors as APIError with the server's code and message, and the event
// stream read with fetch (EventSource cannot send an Authorization header).

const TOKEN_KEY = 'drydock.token';

export function token() {
  try {
    return localStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

export function setToken(t) {
  if (t) localStorage.setItem(TOKEN_KEY, t);
  else localStorage.removeItem(TOKEN_KEY);
}

export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const h = { ...extra };
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

async function failure(resp) {
  let code = '';
  let message = `${resp.status} ${resp.statusText}`;
  try {
    const body = await resp.json();
    code = body.error.code;
    message = body.error.message;
  } catch {
    // not the API's JSON error shape
  }
  if (resp.status === 401) window.dispatchEvent(new CustomEvent('drydock:unauthorized', { detail: message }));
  return new APIError(resp.status, code, message);
}

// call sends a request and returns the decoded JSON answer (or the Response
// itself with raw: true).
export async function call(path, { method = 'GET', body, signal, raw = false, extraHeaders = {} } = {}) {
  const init = { method, headers: { ...headers(), ...extraHeaders }, signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (!resp.ok) throw await failure(resp);
  return raw ? resp : resp.json();
}

export const jobURL = (id) => `/v1/jobs/${encodeURIComponent(id)}`;

export function filesURL(id, path) {
  return `${jobURL(id)}/files/${path.split('/').map(encodeURIComponent).join('/')}`;
}

// download fetches url with the token and hands the bytes to the browser as
// a file named name.
export async function download(url, name) {
  const resp = await call(url, { raw: true });
  const blob = await resp.blob();
  const href = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 60_000);
}

function parseBlock(block) {
  const ev = { event: 'message', data: '', id: '' };
  let seen = false;
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') ev.data += (ev.data ? '\n' : '') + value;
    else if (field === 'event') ev.event = value;
    else if (field === 'id') ev.id = value;
    else continue;
    seen = true;
  }
  return seen && ev.data !== '' ? ev : null;
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

// followEvents calls onEvent for every event of the job after seq `after`,
// live, until the stream's end event (then onEnd(status)) or signal aborts.
// It reconnects with Last-Event-ID after a network failure, so no event is
// missed or repeated.
export async function followEvents(id, { after = 0, onEvent, onEnd, onState, signal }) {
  let last = after;
  let wait = 1000;
  while (!signal.aborted) {
    try {
      const h = headers({ Accept: 'text/event-stream' });
      if (last > 0) h['Last-Event-ID'] = String(last);
      const resp = await fetch(`${jobURL(id)}/events`, { headers: h, signal });
      if (!resp.ok) {
        const err = await failure(resp);
        if (resp.status < 500 && resp.status !== 429) throw err;
        onState?.('reconnecting', err.message);
      } else {
        onState?.('live');
        wait = 1000;
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value.replaceAll('\r\n', '\n');
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const ev = parseBlock(buf.slice(0, i));
            buf = buf.slice(i + 2);
            if (!ev) continue;
            if (ev.event === 'end') {
              onEnd?.(JSON.parse(ev.data).status);
              return;
            }
            if (ev.id) last = Number(ev.id);
            onEvent(JSON.parse(ev.data));
          }
        }
        onState?.('reconnecting', 'the stream was interrupted');
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof APIError) {
        onState?.('failed', e.message);
        throw e;
      }
      onState?.('reconnecting', e.message);
    }
    await sleep(wait, signal);
    wait = Math.min(wait * 2, 15000);
  }
}

// newIdempotencyKey names one creation for the server, so that a retry
// after a lost answer returns the same job instead of a second one.
// crypto.getRandomValues, unlike randomUUID, works on plain http too.
export function newIdempotencyKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
