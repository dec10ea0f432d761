// Messages to a job's agent (issue 16 §1): the message box under the
// timeline and the question an interactive job's agent waits on. Every text
// here (the question, the server's errors) is inserted as text, never HTML.
import { call, jobURL } from './api.js';
import { h, terminal } from './util.js';

const MAX_BYTES = 64 * 1024; // drydock.MaxMessageBytes

// messageBox returns the box's form (under the timeline) and the banner
// that shows a waiting_for question (at the top of the page); update(job)
// keeps both in step with the job.
export function messageBox(id) {
  const input = h('textarea', {
    id: 'message-text', name: 'text', rows: 3, required: true,
    placeholder: 'Steer the agent: it reads this before its next step (Ctrl+Enter sends)',
  });
  const send = h('button', { type: 'submit', class: 'primary', id: 'message-send' }, 'Send');
  const state = h('p', { class: 'form-status small', id: 'message-status', role: 'status' });
  const form = h('form', { class: 'message-box', id: 'message-form', 'aria-label': 'Message to the agent' },
    h('label', { for: 'message-text' }, 'Message to the agent'), input,
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
      const ev = await call(`${jobURL(id)}/messages`, { method: 'POST', body: { text } });
      input.value = '';
      say(`Sent (event ${ev.seq}); the agent reads it before its next step.`);
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
    // Only live jobs take messages; a finished job's would be a follow-up
    // (issue 16 §3).
    form.hidden = terminal(job.status);
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
