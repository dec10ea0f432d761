// Pause and resume: the job page's button, the paused state
// in its header, and the timeline's paused/resumed events.
import { call, jobURL } from './api.js';
import { h, terminal } from './util.js';

// pauseButton returns the Pause or Resume button of an unfinished job;
// onJob gets the job the server answers, onError a failure's message.
export function pauseButton(job, onJob, onError) {
  if (terminal(job.status)) return null;
  const paused = job.paused && job.paused_by;
  const op = paused ? 'resume' : 'pause';
  const label = paused ? 'Resume' : 'Pause';
  const btn = h('button', {
    type: 'button', id: op, 'aria-pressed': paused ? 'true' : 'false',
    title: paused ? 'Let the agent go on' : 'The agent finishes the tool call it runs, then waits',
    onclick: async () => {
      btn.disabled = true;
      try {
        onJob(await call(`${jobURL(job.job_id)}/${op}`, { method: 'POST' }));
      } catch (err) {
        onError(`${label} failed: ${err.message}`);
        btn.disabled = false;
      }
    },
  }, label);
  return btn;
}

function seconds(s) {
  s = Math.round(s || 0);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

// pausedFact is the header's "Paused" value, or null for a job never paused.
export function pausedFact(job) {
  if (job.paused) {
    const who = [];
    if (job.paused_by) who.push(`by ${job.paused_by}`);
    if (job.control_holder) who.push(`${job.control_holder} has control of the desktop`);
    return h('span', { id: 'paused', class: 'pill paused' }, `paused${who.length ? ' ' + who.join('; ') : ''} (${seconds(job.paused_seconds)} in all)`);
  }
  if (job.paused_seconds) return h('span', { id: 'paused' }, `no (${seconds(job.paused_seconds)} in all)`);
  return null;
}

// renderPause returns the timeline's body for a paused or resumed event.
export function renderPause(ev) {
  const d = ev.data ?? {};
  const by = d.by ? ` by ${d.by}` : '';
  if (ev.type === 'paused') {
    return h('p', {}, d.reason === 'control' ? `${d.by || 'A person'} took control of the desktop; the agent waits.` : `Paused${by}; the agent waits.`);
  }
  let s;
  switch (d.reason) {
    case 'control': s = d.expired ? `Control of the desktop ended (${d.by || 'the viewer'} left)` : `${d.by || 'The viewer'} released control of the desktop`; break;
    case 'pause-max': s = 'The pause reached the server\'s limit (--pause-max)'; break;
    default: s = `Resumed${by}`;
  }
  if (d.still_paused) s += '; the job stays paused.';
  else s += d.seconds ? `; the agent goes on after ${seconds(d.seconds)}.` : '; the agent goes on.';
  return h('p', {}, s);
}
