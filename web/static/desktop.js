// The desktop page opened through a signed link: /jobs/{id}/desktop?t=...
// The link's readable payload says whether it grants control.
import { connectRFB } from './desktop-view.js';

const screen = document.getElementById('screen');
const state = document.getElementById('desktop-state');
const mode = document.getElementById('desktop-mode');
const params = new URLSearchParams(location.search);
const link = params.get('t') || '';
let control = params.get('control') === '1';
if (link) {
  try {
    const payload = JSON.parse(atob(link.split('.')[0].replaceAll('-', '+').replaceAll('_', '/')));
    control = Boolean(payload.c);
    document.getElementById('desktop-title').textContent = `Job ${payload.j.slice(0, 8)}… desktop`;
  } catch {
    // the server checks the link; a bad one fails to connect below
  }
}
mode.textContent = control ? 'you have control' : 'view only';
const ws = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${location.pathname.replace(/\/$/, '')}/websockify${location.search}`;
connectRFB(screen, ws, control, (s, why) => {
  state.textContent = why ? `${s}: ${why}` : s;
  state.className = `pill desktop-${s}`;
  if (s === 'disconnected') mode.textContent = 'The desktop closed (the job may have ended, or the link expired). Open it again from the job page.';
});
