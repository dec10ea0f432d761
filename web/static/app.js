// The UI's entry: token handling and a small router over location.pathname
// ("/" is the jobs page, "/jobs/{id}" a job's page, "/evals/{run}" the
// page of a drydock eval run).
import { token, setToken } from './api.js';
import { jobsPage } from './jobs.js';
import { jobPage } from './job.js';
import { evalPage } from './evals.js';

const main = document.getElementById('main');
let leave = null; // stops the current page's timers and streams

function route() {
  leave?.();
  leave = null;
  const m = location.pathname.match(/^\/jobs\/([^/]+)\/?$/);
  const ev = location.pathname.match(/^\/evals\/([^/]+)\/?$/);
  main.replaceChildren();
  if (m) leave = jobPage(main, decodeURIComponent(m[1]), navigate);
  else if (ev) leave = evalPage(main, decodeURIComponent(ev[1]));
  else leave = jobsPage(main, navigate);
}

export function navigate(path) {
  history.pushState({}, '', path);
  route();
  main.focus();
}

function tokenForm() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  const state = document.getElementById('token-state');
  const show = () => {
    state.textContent = token() ? 'token saved in this browser' : 'no token (development mode needs none)';
  };
  show();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    input.value = '';
    show();
    route();
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    setToken('');
    show();
    route();
  });
  window.addEventListener('drydock:unauthorized', (e) => {
    state.textContent = `${e.detail} — enter an API token`;
    form.classList.add('needs-token');
  });
}

// In-page links go through the router instead of reloading.
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download') || e.defaultPrevented || e.button !== 0 ||
      e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !(url.pathname === '/' || /^\/(jobs|evals)\/[^/]+\/?$/.test(url.pathname))) return;
  e.preventDefault();
  if (url.pathname === location.pathname && url.hash) {
    location.hash = url.hash;
    return;
  }
  navigate(url.pathname + url.hash);
});
window.addEventListener('popstate', route);
tokenForm();
route();
