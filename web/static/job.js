// A job's page: header with status and actions, the live timeline, the
// desktop (desktop jobs) and the workspace files.
import { call, download, followEvents, jobURL, APIError } from './api.js';
import { h, age, duration, cost, tokens, statusPill, terminal, firstLine } from './util.js';
import { render } from './timeline.js';
import { filesPanel } from './files.js';
import { desktopPanel } from './desktop-view.js';
import { diffPanel } from './diff.js';
import { messageBox } from './messages.js';
import { threadPanel } from './thread.js';
import { pauseButton, pausedFact } from './pause.js';

const REFRESH_MS = 2000;
const JUPYTER_WAIT_MS = 120000; // how long "Open Jupyter" waits for a starting sandbox

export function jobPage(root, id, navigate) {
  document.title = `Drydock: job ${id.slice(0, 8)}`;
  const ctl = new AbortController();
  let job = null;
  let timer = null;
  let desktop = null;
  let files = null;
  let filesWasLive = false;
  let changes = null;
  let changesWereLive = false;

  const head = h('section', { class: 'job-head', 'aria-labelledby': 'job-h' });
  const timeline = h('ol', { class: 'timeline', id: 'timeline', 'aria-label': 'Events, oldest first' });
  const streamState = h('span', { class: 'muted small', role: 'status' });
  const side = h('div', { class: 'job-side' });
  const messages = messageBox(id, (job) => navigate(`/jobs/${encodeURIComponent(job.job_id)}`));
  const body = h('div', { class: 'job-body' },
    h('section', { class: 'card timeline-card', 'aria-labelledby': 'timeline-h' },
      h('div', { class: 'section-head' }, h('h2', { id: 'timeline-h' }, 'Timeline'), streamState), timeline, messages.el),
    side);
  const thread = threadPanel(id);
  root.append(h('p', {}, h('a', { href: '/' }, '← All jobs')), head, thread.el, body);

  function fact(label, value, attrs = {}) {
    return [h('dt', {}, label), h('dd', attrs, value)];
  }

  function renderHead() {
    const j = job;
    const actions = h('div', { class: 'actions' });
    if (!terminal(j.status)) {
      actions.append(h('button', { type: 'button', class: 'danger', id: 'cancel', onclick: cancel }, 'Cancel job'));
      actions.append(pauseButton(j, (got) => { job = got; renderHead(); }, (msg) => { streamState.textContent = msg; }));
    }
    if (j.download_url) {
      actions.append(
        h('button', { type: 'button', id: 'download-zip', onclick: () => download(`${jobURL(id)}/artifact.zip`, `${id}.zip`) }, 'Download .zip'),
        h('button', { type: 'button', id: 'download-targz', onclick: () => download(`${jobURL(id)}/artifact.tar.gz`, `${id}.tar.gz`) }, 'Download .tar.gz'));
    }
    if (j.status === 'running') {
      actions.append(h('button', { type: 'button', id: 'open-jupyter', onclick: openJupyter }, 'Open Jupyter'));
    }
    const outcome = [];
    if (j.summary) outcome.push(h('div', { class: 'summary card', id: 'summary' }, h('h2', {}, 'Summary'), h('p', { class: 'prose' }, j.summary)));
    if (j.error) outcome.push(h('div', { class: 'card error-box', role: 'alert' }, h('h2', {}, 'Error'), h('p', {}, j.error)));
    head.replaceChildren(
      h('div', { class: 'title-row' }, h('h1', { id: 'job-h' }, firstLine(j.task, 90) || 'Job'), statusPill(j.status)),
      messages.banner,
      h('details', { class: 'task-full' }, h('summary', {}, 'Task'), h('pre', { class: 'prose' }, j.task)),
      h('dl', { class: 'facts' },
        fact('Job', h('code', {}, j.job_id)),
        j.parent_job_id && fact('Follows up', h('a', { href: `/jobs/${encodeURIComponent(j.parent_job_id)}`, id: 'parent-link' }, h('code', {}, j.parent_job_id))),
        fact('Profile', j.profile),
        fact('Model', j.model || 'default'),
        j.repo && fact('Repository', h('code', { id: 'repo' }, j.repo.url + (j.repo.ref ? `@${j.repo.ref}` : ''))),
        j.pushed_commit && fact('Pushed', h('code', { id: 'pushed' }, `${j.repo?.push?.branch ?? ''} @ ${j.pushed_commit.slice(0, 12)}`)),
        fact('Age', age(j.created_at), { title: new Date(j.created_at).toLocaleString() }),
        fact('Ran', j.started_at ? duration(j.started_at, j.finished_at) : '—'),
        fact('Steps', String(j.steps), { id: 'steps' }),
        pausedFact(j) && fact('Paused', pausedFact(j)),
        fact('Tokens', tokens(j.usage)),
        fact('Cost', cost(j.usage))),
      actions, ...outcome);
    messages.update(j);
  }

  function renderSide() {
    if (job.profile === 'desktop' && job.status === 'running' && !desktop) {
      desktop = desktopPanel(id);
      side.prepend(desktop.el);
      desktop.start();
    }
    if (desktop && terminal(job.status)) desktop.stop('the job has ended');
    const live = job.status === 'running';
    if (!files && (live || job.download_url)) {
      files = filesPanel(id);
      side.append(files.el);
      files.refresh();
      filesWasLive = live;
    } else if (files && filesWasLive && !live && job.download_url) {
      // The sandbox is gone; read the archive now.
      filesWasLive = false;
      files.refresh();
    }
    // The diff is computed in the sandbox on each request, so a running
    // job's is read once and on Refresh, and once more from the stored one
    // when the job ends.
    if (!changes && job.diff_url) {
      changes = diffPanel(id);
      root.append(changes.el);
      changes.refresh();
      changesWereLive = live;
    } else if (changes && changesWereLive && !live && job.download_url) {
      changesWereLive = false;
      changes.refresh();
    }
  }

  async function load() {
    try {
      job = await call(jobURL(id), { signal: ctl.signal });
      renderHead();
      renderSide();
      thread.update(job, ctl.signal).catch(() => {});
      if (terminal(job.status) && (job.download_url || job.status !== 'complete')) {
        clearInterval(timer);
        timer = null;
      }
    } catch (err) {
      if (ctl.signal.aborted) return;
      if (err instanceof APIError && err.status === 404) {
        head.replaceChildren(h('h1', { id: 'job-h' }, 'Job not found'),
          h('p', {}, `No job ${id} is visible with this token.`));
        body.hidden = true;
        clearInterval(timer);
        ctl.abort();
      } else {
        head.replaceChildren(h('h1', { id: 'job-h' }, 'Job'), h('p', { class: 'error' }, err.message));
      }
    }
  }

  async function cancel() {
    try {
      job = await call(`${jobURL(id)}/cancel`, { method: 'POST' });
      renderHead();
    } catch (err) {
      streamState.textContent = `Cancel failed: ${err.message}`;
    }
  }

  async function openJupyter() {
    // Open the tab now, while the click still allows a popup, and send it
    // to the link once the API has signed one. The button shows as soon as
    // the job runs, before its sandbox exists: a 503 is asked again for a
    // while rather than make the person click again.
    const tab = window.open('about:blank', '_blank');
    const until = Date.now() + JUPYTER_WAIT_MS;
    const waiting = 'Jupyter: waiting for the job\'s sandbox…';
    const before = streamState.textContent;
    for (;;) {
      try {
        const link = await call(`${jobURL(id)}/jupyter/link`, { method: 'POST' });
        if (streamState.textContent === waiting) streamState.textContent = before;
        if (tab) {
          tab.opener = null;
          tab.location = link.url;
        }
        return;
      } catch (err) {
        if (err.status === 503 && Date.now() < until && !tab?.closed && !ctl.signal.aborted) {
          streamState.textContent = waiting;
          await new Promise((resolve) => setTimeout(resolve, 2000));
          continue;
        }
        tab?.close();
        streamState.textContent = `Jupyter: ${err.message}`;
        return;
      }
    }
  }

  function onEvent(ev) {
    const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
    const li = render(ev);
    if (li) timeline.append(li);
    if (['status', 'summary', 'artifact', 'paused', 'resumed'].includes(ev.type)) load();
    if (li && nearBottom && timeline.children.length > 3) li.scrollIntoView({ block: 'end' });
  }

  load();
  timer = setInterval(() => { if (!document.hidden) load(); }, REFRESH_MS);
  followEvents(id, {
    onEvent,
    onEnd: () => {
      streamState.textContent = 'the job has ended';
      load();
    },
    onState: (s, why) => { streamState.textContent = s === 'live' ? 'live' : `${s}${why ? ': ' + why : ''}`; },
    signal: ctl.signal,
  }).catch(() => {});

  return () => {
    ctl.abort();
    clearInterval(timer);
    desktop?.stop('');
    files?.stop();
    changes?.stop();
  };
}
