// The page of a drydock eval run (/evals/{run}): the run's jobs, found by
// their metadata (eval_run), each task's attempts with how its job ended
// and what its check said, and links to every job. Everything shown is
// built from the server's records, so the page works for a run started
// from any machine.
import { call } from './api.js';
import { h, cost, tokens, duration, statusPill } from './util.js';

const PAGE = 500;
const MAX_PAGES = 20; // 10000 jobs: more than any suite run makes
const REFRESH_MS = 5000;

export function evalPage(root, run) {
  document.title = `Drydock: eval run ${run}`;
  const ctl = new AbortController();
  const state = h('p', { class: 'muted', role: 'status' }, 'Loading…');
  const summary = h('p', { class: 'eval-summary' });
  const tbody = h('tbody');
  const table = h('table', { class: 'jobs' },
    h('caption', { class: 'visually-hidden' }, 'Attempts of the run, by task'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Task'), h('th', { scope: 'col' }, 'Attempt'), h('th', { scope: 'col' }, 'Job'),
      h('th', { scope: 'col' }, 'Check'), h('th', { scope: 'col' }, 'Result'),
      h('th', { scope: 'col', class: 'num' }, 'Steps'), h('th', { scope: 'col', class: 'num' }, 'Tokens'),
      h('th', { scope: 'col', class: 'num' }, 'Cost'), h('th', { scope: 'col', class: 'num' }, 'Time'))),
    tbody);
  root.append(h('section', { 'aria-labelledby': 'eval-h' },
    h('h1', { id: 'eval-h' }, 'Eval run ', h('code', {}, run)),
    summary, table, state,
    h('p', { class: 'muted small' }, 'A task passes when its job completed and its check, run in a fresh sandbox holding the finished workspace, exited 0. ',
      'drydock eval prints the same with the tail of each failed check\'s output; its JSON report (-o) keeps it.')));

  const exits = new Map(); // check job id → exit code, once known

  async function jobsOfRun() {
    const jobs = [];
    let cursor = '';
    for (let i = 0; i < MAX_PAGES; i++) {
      const q = new URLSearchParams({ limit: String(PAGE), metadata: `eval_run=${run}` });
      if (cursor) q.set('cursor', cursor);
      const page = await call('/v1/jobs?' + q, { signal: ctl.signal });
      jobs.push(...page.jobs);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    return jobs;
  }

  // checkExit reads the exit code of the command a check job ran from its
  // log (caller_command), once the check job has finished.
  async function checkExit(job) {
    if (exits.has(job.job_id)) return exits.get(job.job_id);
    let exit = null;
    let after = 0;
    for (let i = 0; i < 20; i++) {
      const page = await call(`/v1/jobs/${encodeURIComponent(job.job_id)}/events?limit=1000&after=${after}`, { signal: ctl.signal });
      for (const e of page.events) {
        if (e.type === 'log' && e.data?.kind === 'caller_command' && typeof e.data.exit_code === 'number') exit = e.data.exit_code;
      }
      if (page.done || !page.events.length) break;
      after = page.next_after;
    }
    if (['complete', 'error', 'cancelled'].includes(job.status)) exits.set(job.job_id, exit);
    return exit;
  }

  // checkOutput is the tail of a finished check's output, which drydock
  // eval saves in the check job's workspace (drydock-eval-check.log).
  const outputs = new Map();
  async function checkOutput(check) {
    if (outputs.has(check.job_id)) return outputs.get(check.job_id);
    let text = '';
    try {
      const resp = await call(`/v1/jobs/${encodeURIComponent(check.job_id)}/files/drydock-eval-check.log`, { signal: ctl.signal, raw: true });
      text = (await resp.text()).trimEnd().split('\n').slice(-12).join('\n');
    } catch {
      // not saved (an older drydock eval) or not archived yet
    }
    if (text || ['complete', 'error', 'cancelled'].includes(check.status)) outputs.set(check.job_id, text);
    return text;
  }

  function verdict(job, check, exit) {
    if (job.status === 'pending' || job.status === 'running') return ['running', 'job running'];
    if (job.status !== 'complete') return ['failed', job.status === 'cancelled' ? 'cancelled' : `job ${job.status}: ${job.error || ''}`];
    if (!check) return ['pending', 'no check yet'];
    if (exit === null) return check.status === 'pending' || check.status === 'running' ? ['running', 'check running'] : ['failed', `check did not run (${check.status})`];
    return exit === 0 ? ['passed', 'passed'] : ['failed', exit === -1 ? 'check timed out' : `check failed (exit ${exit})`];
  }

  async function refresh() {
    try {
      const jobs = await jobsOfRun();
      const checks = new Map();
      const attempts = [];
      for (const j of jobs) {
        const m = j.metadata || {};
        if (m.eval_role === 'check') {
          // The newest check of a job wins (a resumed run checks again).
          if (m.eval_check_of && !checks.has(m.eval_check_of)) checks.set(m.eval_check_of, j);
        } else attempts.push(j);
      }
      attempts.sort((a, b) => (a.metadata.eval_task || '').localeCompare(b.metadata.eval_task || '') ||
        Number(a.metadata.eval_attempt || 0) - Number(b.metadata.eval_attempt || 0));
      const rows = [];
      const byTask = new Map();
      let passed = 0;
      let suite = '';
      for (const j of attempts) {
        suite = suite || j.metadata.eval_suite || '';
        const check = checks.get(j.job_id);
        const exit = check ? await checkExit(check) : null;
        const [kind, text] = verdict(j, check, exit);
        if (kind === 'passed') passed++;
        const task = j.metadata.eval_task || '(no task)';
        const t = byTask.get(task) || { runs: 0, passed: 0 };
        t.runs++;
        if (kind === 'passed') t.passed++;
        byTask.set(task, t);
        const link = (id, label) => h('a', { href: `/jobs/${encodeURIComponent(id)}` }, label);
        const out = kind === 'failed' && check && exit !== null ? await checkOutput(check) : '';
        rows.push(h('tr', { dataset: { id: j.job_id, result: kind } },
          h('td', {}, task), h('td', {}, j.metadata.eval_attempt || ''),
          h('td', {}, link(j.job_id, j.job_id.slice(-12)), ' ', statusPill(j.status)),
          h('td', {}, check ? link(check.job_id, check.job_id.slice(-12)) : '—'),
          h('td', { class: `eval-${kind}` }, text, out ? h('pre', { class: 'eval-output' }, out) : null),
          h('td', { class: 'num' }, String(j.steps)), h('td', { class: 'num' }, tokens(j.usage)),
          h('td', { class: 'num' }, cost(j.usage)), h('td', { class: 'num' }, duration(j.started_at, j.finished_at))));
      }
      tbody.replaceChildren(...rows);
      const tasks = [...byTask.values()];
      const pass1 = tasks.length ? tasks.reduce((s, t) => s + t.passed / t.runs, 0) / tasks.length : 0;
      const passN = tasks.length ? tasks.filter((t) => t.passed > 0).length / tasks.length : 0;
      summary.replaceChildren(
        suite ? `Suite ${suite}: ` : '', `${passed} of ${attempts.length} attempts passed over ${tasks.length} tasks; `,
        `pass@1 ${(100 * pass1).toFixed(1)}%, pass@N ${(100 * passN).toFixed(1)}%.`);
      state.textContent = attempts.length ? '' : 'No jobs carry this run id (metadata eval_run), or none that this token can see.';
    } catch (err) {
      if (ctl.signal.aborted) return;
      state.textContent = `Cannot list the run's jobs: ${err.message}`;
    }
  }

  refresh();
  const timer = setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
  return () => {
    clearInterval(timer);
    ctl.abort();
  };
}
