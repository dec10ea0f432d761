// The jobs page: a new-task form and the list of jobs, refreshed live.
import { call, APIError, newIdempotencyKey } from './api.js';
import { h, age, cost, statusPill, firstLine } from './util.js';

const STATUSES = ['pending', 'running', 'complete', 'error', 'cancelled'];
const REFRESH_MS = 2000;

export function jobsPage(root, navigate) {
  document.title = 'Drydock: jobs';
  const ctl = new AbortController();
  let filter = sessionStorage.getItem('drydock.filter') || '';
  let extra = []; // jobs of pages loaded with "Load more"
  let cursor = '';

  const message = h('p', { class: 'form-status', role: 'status', 'aria-live': 'polite' });
  const task = h('textarea', { id: 'task', name: 'task', rows: 4, required: true, placeholder: 'What should the agent do?' });
  const profile = h('select', { id: 'profile', name: 'profile' },
    h('option', { value: 'headless' }, 'headless (fastest)'),
    h('option', { value: 'desktop' }, 'desktop (live screen)'));
  const model = h('input', { id: 'model', name: 'model', type: 'text', placeholder: 'server default', autocomplete: 'off' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Schedule task');
  const form = h('form', { class: 'card new-task', onsubmit: onSubmit },
    h('div', { class: 'field wide' }, h('label', { for: 'task' }, 'Task'), task),
    h('div', { class: 'field' }, h('label', { for: 'profile' }, 'Profile'), profile),
    h('div', { class: 'field' }, h('label', { for: 'model' }, 'Model'), model),
    h('div', { class: 'field actions' }, submit, message));

  const select = h('select', { id: 'status-filter', onchange: () => {
    filter = select.value;
    sessionStorage.setItem('drydock.filter', filter);
    extra = [];
    refresh();
  } }, h('option', { value: '' }, 'all'), STATUSES.map((s) => h('option', { value: s }, s)));
  select.value = filter;
  const tbody = h('tbody');
  const more = h('button', { type: 'button', hidden: true, onclick: loadMore }, 'Load more');
  const listState = h('p', { class: 'muted', role: 'status' });
  const table = h('table', { class: 'jobs' },
    h('caption', { class: 'visually-hidden' }, 'Jobs, newest first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Task'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Age'),
      h('th', { scope: 'col', class: 'num' }, 'Steps'), h('th', { scope: 'col', class: 'num' }, 'Cost'))),
    tbody);

  root.append(
    h('section', { id: 'new-task', 'aria-labelledby': 'new-task-h' }, h('h1', { id: 'new-task-h' }, 'New task'), form),
    h('section', { 'aria-labelledby': 'jobs-h' },
      h('div', { class: 'section-head' }, h('h2', { id: 'jobs-h' }, 'Jobs'),
        h('div', { class: 'field inline' }, h('label', { for: 'status-filter' }, 'Status'), select)),
      table, listState, more));
  if (location.hash === '#new-task') task.focus();

  let lastSent = '';
  let lastKey = '';

  async function onSubmit(e) {
    e.preventDefault();
    submit.disabled = true;
    message.textContent = 'Scheduling…';
    try {
      const body = { task: task.value, profile: profile.value };
      if (model.value.trim()) body.model = model.value.trim();
      // The same form submitted again after a failure keeps its key: if
      // the first request did create the job, the retry gets that job.
      const sent = JSON.stringify(body);
      if (sent !== lastSent) { lastSent = sent; lastKey = newIdempotencyKey(); }
      const job = await call('/v1/jobs', { method: 'POST', body, extraHeaders: { 'Idempotency-Key': lastKey } });
      lastSent = '';
      navigate(`/jobs/${encodeURIComponent(job.job_id)}`);
    } catch (err) {
      message.textContent = err instanceof APIError ? `Not scheduled: ${err.message}` : `Not scheduled: ${err}`;
      submit.disabled = false;
    }
  }

  function row(j) {
    const title = firstLine(j.task) || '(no task)';
    return h('tr', { dataset: { id: j.job_id, status: j.status } },
      h('td', { class: 'task-cell' }, h('a', { href: `/jobs/${encodeURIComponent(j.job_id)}` }, title),
        h('span', { class: 'muted small' }, ` ${j.profile}${j.model ? ' · ' + j.model : ''}${j.parent_job_id ? ' · follow-up' : ''}`),
        j.metadata?.eval_run ? h('span', { class: 'muted small' }, ' · ',
          h('a', { class: 'eval-link', href: `/evals/${encodeURIComponent(j.metadata.eval_run)}` }, `eval ${j.metadata.eval_run}`)) : null),
      h('td', {}, statusPill(j.status), j.paused ? h('span', { class: 'pill paused' }, 'paused') : null),
      h('td', { title: new Date(j.created_at).toLocaleString() }, age(j.created_at)),
      h('td', { class: 'num' }, String(j.steps)),
      h('td', { class: 'num' }, cost(j.usage)));
  }

  function query(c) {
    const q = new URLSearchParams({ limit: '50' });
    if (filter) q.set('status', filter);
    if (c) q.set('cursor', c);
    return '/v1/jobs?' + q;
  }

  async function refresh() {
    try {
      const page = await call(query(''), { signal: ctl.signal });
      if (!extra.length) cursor = page.next_cursor;
      const seen = new Set(page.jobs.map((j) => j.job_id));
      const jobs = page.jobs.concat(extra.filter((j) => !seen.has(j.job_id)));
      tbody.replaceChildren(...jobs.map(row));
      listState.textContent = jobs.length ? '' : (filter ? `No ${filter} jobs.` : 'No jobs yet: schedule one above.');
      more.hidden = !cursor;
    } catch (err) {
      if (ctl.signal.aborted) return;
      listState.textContent = `Cannot list jobs: ${err.message}`;
    }
  }

  async function loadMore() {
    try {
      const page = await call(query(cursor), { signal: ctl.signal });
      extra = extra.concat(page.jobs);
      cursor = page.next_cursor;
      refresh();
    } catch (err) {
      listState.textContent = `Cannot list more jobs: ${err.message}`;
    }
  }

  refresh();
  const timer = setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
  return () => {
    clearInterval(timer);
    ctl.abort();
  };
}
