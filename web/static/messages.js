// Messages to a job's agent: the message box under the
// timeline and the question an interactive job's agent waits on. Every text
// here (the question, the server's errors) is inserted as text, never HTML.
import { call, jobURL } from './api.js';
import { h, terminal } from './util.js';

const MAX_BYTES = 64 * 1024; // drydock.MaxMessageBytes

// messageBox returns the box's form (under the timeline) and the banner
// that shows a waiting_for question (at the top of the page); update(job)
// keeps both in step with the job. On a finished job the same box asks for
// a follow-up: a new job that continues this one, which
// followed(job) opens.
export function messageBox(id, followed = () => {}) {
  const input = h('textarea', {
    id: 'message-text', name: 'text', rows: 3, required: true,
    placeholder: 'Steer the agent: it reads this before its next step (Ctrl+Enter sends)',
  });
  const send = h('button', { type: 'submit', class: 'primary', id: 'message-send' }, 'Send');
  const state = h('p', { class: 'form-status small', id: 'message-status', role: 'status' });
  const label = h('label', { for: 'message-text' }, 'Message to the agent');
  const form = h('form', { class: 'message-box', id: 'message-form', 'aria-label': 'Message to the agent' },
    label, input,
    h('div', { class: 'message-actions' }, send, state));
  const question = h('p', { class: 'prose', id: 'waiting-question' });
  const banner = h('div', { class: 'card waiting', id: 'waiting-for', role: 'alert', hidden: true },
    h('h2', {}, 'The agent asks'), question,
    h('p', { class: 'muted small' }, 'Answer in the message box below the timeline; the agent waits for it.'));
  let asked = '';

  function say(msg, error = false) {
    state.textContent = msg;
    state.classList.toggle('error', error);
  }

  async function submit(e) {
    e.preventDefault();
    const text = input.value;
    if (!text.trim()) return say('Write a message first.', true);
    if (new TextEncoder().encode(text).length > MAX_BYTES) return say('The message is longer than 64 KiB.', true);
    send.disabled = true;
    say('Sending…');
    try {
      const res = await call(`${jobURL(id)}/messages`, { method: 'POST', body: { text } });
      input.value = '';
      if (res.parent_job_id) {
        say(`Follow-up job ${res.job_id} started.`);
        followed(res);
        return;
      }
      say(`Sent (event ${res.seq}); the agent reads it before its next step.`);
    } catch (err) {
      say(`Not sent: ${err.message}`, true);
    } finally {
      send.disabled = false;
    }
  }

  form.addEventListener('submit', submit);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });

  function update(job) {
    // A live job's agent reads the message; a finished job is continued
    // by a follow-up job, which needs the job's archived workspace.
    const done = terminal(job.status);
    form.hidden = done && !job.download_url;
    const mode = done ? 'follow-up' : 'message';
    if (form.dataset.mode !== mode) {
      form.dataset.mode = mode;
      label.textContent = done ? 'Follow up: ask for the next change' : 'Message to the agent';
      input.placeholder = done
        ? 'A new job continues from this one\'s workspace and conversation (Ctrl+Enter sends)'
        : 'Steer the agent: it reads this before its next step (Ctrl+Enter sends)';
      send.textContent = done ? 'Start follow-up' : 'Send';
    }
    const q = job.waiting_for || '';
    banner.hidden = !q;
    // Set only on a change: the banner is an alert, announced when its
    // text changes, and the page refreshes the job every 2 s.
    if (question.textContent !== q) question.textContent = q;
    if (q && q !== asked && !form.hidden) input.focus();
    asked = q;
  }

  return { el: form, banner, update };
}
