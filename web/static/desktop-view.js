// The live desktop: noVNC connected through the orchestrator with a signed
// link. View-only unless the owner takes control; the server enforces the
// mode too, so a modified page gains nothing.
import RFB from './novnc/core/rfb.js';
import { call, jobURL } from './api.js';
import { h } from './util.js';

// connectRFB draws the desktop at wsURL into screen and reports its state
// ("connected", "disconnected", with a reason) through onState.
export function connectRFB(screen, wsURL, control, onState) {
  const rfb = new RFB(screen, wsURL, { shared: true, wsProtocols: ['binary'] });
  rfb.viewOnly = !control;
  rfb.scaleViewport = true;
  rfb.resizeSession = false;
  rfb.focusOnClick = control;
  rfb.background = '#1b1f24';
  rfb.addEventListener('connect', () => onState('connected'));
  rfb.addEventListener('disconnect', (e) => onState('disconnected', e.detail?.clean ? '' : 'the connection failed'));
  rfb.addEventListener('securityfailure', (e) => onState('disconnected', e.detail?.reason || 'refused'));
  rfb.addEventListener('desktopname', (e) => screen.setAttribute('aria-label', `Desktop: ${e.detail.name}`));
  return rfb;
}

export function desktopPanel(jobID) {
  const state = h('span', { class: 'pill', role: 'status', 'aria-live': 'polite' }, 'not connected');
  const control = h('button', { type: 'button', 'aria-pressed': 'false', onclick: () => toggle() }, 'Take control');
  const newTab = h('button', { type: 'button', onclick: () => openTab() }, 'Open in new tab');
  const screen = h('div', { class: 'screen', id: 'desktop-screen', role: 'group', 'aria-label': "The job's desktop" });
  const note = h('p', { class: 'muted small' });
  const el = h('section', { class: 'card desktop', 'aria-labelledby': 'desktop-h' },
    h('div', { class: 'section-head' }, h('h2', { id: 'desktop-h' }, 'Live desktop'), state, control, newTab),
    screen, note);
  let rfb = null;
  let controlling = false;
  let stopped = false;
  let retry = null;
  let gen = 0; // connections of an older generation are ignored
  let refusal = ''; // why the page is not in control after it asked

  function show(s, why = '') {
    state.textContent = why ? `${s}: ${why}` : s;
    state.className = `pill desktop-${s}`;
  }

  async function connect() {
    clearTimeout(retry);
    if (stopped) return;
    const my = ++gen;
    show('connecting');
    try {
      const link = await call(`${jobURL(jobID)}/desktop/link`, { method: 'POST', body: { control: controlling } });
      if (stopped || my !== gen) return;
      rfb = connectRFB(screen, link.websocket_url, controlling, (s, why) => {
        if (my !== gen) return;
        show(s, why);
        if (s === 'disconnected') {
          rfb = null;
          if (controlling) {
            // Control ended without our asking (the server ended the lease:
            // expired, taken over, or past its pause limit; or the
            // connection broke): watch again rather than take it back
            // unasked, which would pause the agent again.
            setControlling(false);
            refusal = 'Control ended (released elsewhere, expired, or past the server\'s pause limit); take it again if you still need it.';
          }
          if (!stopped) retry = setTimeout(connect, 3000);
        }
      });
      note.textContent = controlling
        ? 'You control the desktop: keyboard and mouse input reach the sandbox, and the agent waits until you release it.'
        : 'View only: your keyboard and mouse do not reach the sandbox.';
      if (refusal) note.textContent += ` ${refusal}`;
    } catch (err) {
      if (controlling && err.status === 409 && my === gen) {
        // Someone else has control (the server names them): watch instead.
        setControlling(false);
        refusal = `Control refused: ${err.message}`;
        connect();
        return;
      }
      show('unavailable', err.message);
      if (!stopped && err.status !== 404 && err.status !== 409 && err.status !== 501) retry = setTimeout(connect, 3000);
    }
  }

  function setControlling(on) {
    controlling = on;
    control.setAttribute('aria-pressed', String(controlling));
    control.textContent = controlling ? 'Release control' : 'Take control';
  }

  function toggle() {
    refusal = '';
    setControlling(!controlling);
    gen++;
    rfb?.disconnect();
    rfb = null;
    connect();
  }

  async function openTab() {
    try {
      const link = await call(`${jobURL(jobID)}/desktop/link`, { method: 'POST', body: { control: controlling } });
      window.open(link.url, '_blank', 'noopener');
    } catch (err) {
      show('unavailable', err.message);
    }
  }

  function stop(reason) {
    stopped = true;
    gen++;
    clearTimeout(retry);
    rfb?.disconnect();
    rfb = null;
    show('ended', reason);
    control.disabled = true;
    newTab.disabled = true;
  }

  return { el, start: connect, stop, screen };
}
