// The desktop page opened through a signed link: /jobs/{id}/desktop?t=...
// The link's readable payload says whether it grants control.
import { connectRFB } from './desktop-view.js';

// A link is handed out as soon as the job's sandbox exists, before its
// desktop (or the daemon in front of it) is up; until the link expires, a
// connection that fails is tried again after RETRY_MS.
const RETRY_MS = 2000;

const screen = document.getElementById('screen');
const state = document.getElementById('desktop-state');
const mode = document.getElementById('desktop-mode');
const params = new URLSearchParams(location.search);
const link = params.get('t') || '';
let control = params.get('control') === '1';
let expires = 0; // Unix seconds; 0: unknown, no retries
if (link) {
  try {
    const payload = JSON.parse(atob(link.split('.')[0].replaceAll('-', '+').replaceAll('_', '/')));
    control = Boolean(payload.c);
    expires = Number(payload.e) || 0;
    document.getElementById('desktop-title').textContent = `Job ${payload.j.slice(0, 8)}… desktop`;
  } catch {
    // the server checks the link; a bad one fails to connect below
  }
}
const modeText = control ? 'you have control' : 'view only';
mode.textContent = modeText;
const ws = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${location.pathname.replace(/\/$/, '')}/websockify${location.search}`;

let retry = null;
let gen = 0; // states of an older connection are ignored

function connect() {
  retry = null;
  const my = ++gen;
  connectRFB(screen, ws, control, (s, why) => {
    if (my !== gen) return;
    if (s === 'disconnected' && why && Date.now() / 1000 < expires - 1) {
      // Failed, not closed by the server: the desktop may not be up yet,
      // unless the link itself no longer admits us (its token was revoked,
      // the job is gone), which the page's own URL tells.
      state.textContent = `waiting for the desktop (${why})`;
      state.className = 'pill desktop-connecting';
      if (!retry) {
        retry = setTimeout(() => {
          fetch(location.href, { method: 'HEAD', cache: 'no-store' }).then((r) => {
            if (my !== gen) return;
            if ([401, 403, 404].includes(r.status)) {
              retry = null;
              state.textContent = 'disconnected';
              state.className = 'pill desktop-disconnected';
              mode.textContent = 'This link no longer opens the desktop (the token that made it was revoked, or the job is gone). Open it again from the job page.';
              return;
            }
            connect();
          }, () => connect());
        }, RETRY_MS);
      }
      return;
    }
    state.textContent = why ? `${s}: ${why}` : s;
    state.className = `pill desktop-${s}`;
    if (s === 'connected') mode.textContent = modeText;
    if (s === 'disconnected') mode.textContent = 'The desktop closed (the job may have ended, or the link expired). Open it again from the job page.';
  });
}
connect();
