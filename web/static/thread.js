// The thread a job belongs to: the finished jobs it follows
// up, oldest first, each with its timeline folded, and the jobs that
// follow it up. Together they read as one conversation. A job outside any
// thread shows nothing. Every text here is the jobs' own and is set as
// text, never parsed.
import { call, jobURL } from './api.js';
import { h, statusPill, firstLine } from './util.js';
import { render } from './timeline.js';

const MAX_DEPTH = 32; // the server's bound on a chain of follow-ups
const MAX_LISTED = 20; // follow-ups shown with their task; the rest by id

export function threadPanel(id) {
  const list = h('ol', { class: 'thread-list', id: 'thread-list' });
  const el = h('section', { class: 'card thread', id: 'thread', 'aria-labelledby': 'thread-h', hidden: true },
    h('h2', { id: 'thread-h' }, 'Thread'),
    h('p', { class: 'muted small' }, 'A follow-up starts from the workspace its parent left and from the conversation so far.'),
    list);
  let ancestors = null; // finished jobs: loaded and built once, so an opened timeline stays open
  let shown = '';

  async function loadAncestors(job, signal) {
    const chain = [];
    for (let pid = job.parent_job_id; pid && chain.length < MAX_DEPTH;) {
      try {
        const p = await call(jobURL(pid), { signal });
        chain.unshift(p);
        pid = p.parent_job_id;
      } catch (err) {
        if (signal.aborted) throw err;
        chain.unshift({ job_id: pid, missing: err.message });
        break;
      }
    }
    return chain;
  }

  function entry(j, role, extra) {
    const title = j.missing ? `(${j.missing})` : firstLine(j.task, 100) || j.job_id;
    return h('li', { class: `thread-item thread-${role}`, dataset: { jobId: j.job_id, role } },
      h('div', { class: 'thread-row' },
        role === 'current'
          ? h('strong', { 'aria-current': 'page' }, title)
          : h('a', { href: `/jobs/${encodeURIComponent(j.job_id)}` }, title),
        j.status ? statusPill(j.status) : null,
        h('code', { class: 'muted small' }, j.job_id.slice(0, 8))),
      extra);
  }

  // pastTimeline folds an earlier job's events, fetched when opened.
  function pastTimeline(j, signal) {
    const ol = h('ol', { class: 'timeline', 'aria-label': `Events of job ${j.job_id}, oldest first` });
    const d = h('details', { class: 'thread-timeline' }, h('summary', {}, 'Its timeline'), ol);
    let loaded = false;
    d.addEventListener('toggle', async () => {
      if (!d.open || loaded) return;
      loaded = true;
      try {
        for (let after = 0; ;) {
          const page = await call(`${jobURL(j.job_id)}/events?after=${after}&limit=1000`, { signal });
          for (const ev of page.events ?? []) {
            const li = render(ev);
            if (li) ol.append(li);
          }
          if ((page.events ?? []).length < 1000) break;
          after = page.next_after;
        }
      } catch (err) {
        loaded = false;
        if (!signal.aborted) ol.append(h('li', { class: 'error' }, err.message));
      }
    });
    return d;
  }

  async function update(job, signal) {
    const followUps = job.follow_ups ?? [];
    if (!job.parent_job_id && !followUps.length) {
      el.hidden = true;
      return;
    }
    if (ancestors === null) {
      const chain = job.parent_job_id ? await loadAncestors(job, signal) : [];
      ancestors = chain.map((a) => entry(a, 'ancestor', a.missing ? null : pastTimeline(a, signal)));
    }
    const key = JSON.stringify([job.status, job.task, followUps]);
    if (key === shown) return;
    const children = await Promise.all(followUps.map((cid, i) => i >= MAX_LISTED
      ? { job_id: cid }
      : call(jobURL(cid), { signal }).catch((err) => ({ job_id: cid, missing: err.message }))));
    shown = key;
    list.replaceChildren(
      ...ancestors,
      entry(job, 'current'),
      ...children.map((c) => entry(c, 'follow-up')));
    el.hidden = false;
  }

  // One update at a time: the page refreshes every few seconds, and an
  // update waits for the API.
  let queue = Promise.resolve();
  return {
    el,
    update: (job, signal) => (queue = queue.then(() => update(job, signal)).catch(() => {})),
  };
}
