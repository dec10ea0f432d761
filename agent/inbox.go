package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
)

// Messages to a running job. A user_message event is the
// durable record of a message; the agent delivers it by appending a
// LogMessageDelivered notice that carries the text (masked like every
// event the agent writes). The transcript shows notices where they stand
// in the log, so the message joins the user turn after the last results,
// or the task before the first step, and a resumed run, rebuilding the
// prompt from the log, shows it at the same place. A message whose notice
// is in the log is never delivered again.

// askPoll is how often ask_user looks for an answer. The answer may reach
// any replica's store, so it polls rather than waits on a local signal.
const askPoll = time.Second

// defaultAskTimeout is how long ask_user waits when the config sets none.
const defaultAskTimeout = 30 * time.Minute

// messagePrefix introduces a message in the prompt.
const messagePrefix = "Message from the user:\n\n"

// initInbox finds, in the history the run starts from, the messages not
// delivered yet, and where to look for newer ones.
func (r *run) initInbox() {
	// Only the job's own events: a follow-up's prior events are its
	// ancestors', whose sequence numbers and messages are not its own.
	own := r.events[r.prior:]
	delivered := map[int64]bool{}
	for _, e := range own {
		r.inboxAfter = max(r.inboxAfter, e.Seq)
		if e.Type != drydock.EventLog {
			continue
		}
		var n drydock.LogEvent
		if json.Unmarshal(e.Data, &n) == nil && n.Kind == drydock.LogMessageDelivered {
			delivered[n.Seq] = true
		}
	}
	for _, e := range own {
		if e.Type == drydock.EventUserMessage && !delivered[e.Seq] {
			r.inbox = append(r.inbox, e)
		}
	}
}

// fetchInbox queues the messages stored since the run last looked.
func (r *run) fetchInbox(ctx context.Context) error {
	if r.ar.Inbox == nil {
		return nil
	}
	events, err := r.ar.Inbox(ctx, r.inboxAfter)
	if err != nil {
		return err
	}
	for _, e := range events {
		if e.Seq <= r.inboxAfter {
			continue // a second copy; Inbox promises only newer ones
		}
		r.inboxAfter = e.Seq
		if e.Type == drydock.EventUserMessage {
			r.inbox = append(r.inbox, e)
		}
	}
	return nil
}

// deliver hands the model, before its next call, every message that came
// since the last one.
func (r *run) deliver(ctx context.Context) error {
	if err := r.fetchInbox(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The message stays stored: the next step delivers it rather than
		// a store hiccup failing the job.
		r.log.Warn("read the job's messages", "err", err)
	}
	for len(r.inbox) > 0 {
		e := r.inbox[0]
		var m drydock.UserMessage
		if err := json.Unmarshal(e.Data, &m); err != nil || m.Text == "" {
			r.log.Warn("unreadable message skipped", "seq", e.Seq, "err", err)
			r.inbox = r.inbox[1:]
			continue
		}
		n := drydock.LogEvent{Level: "info", Message: messagePrefix + m.Text, Notice: true, Step: r.steps,
			Kind: drydock.LogMessageDelivered, Seq: e.Seq, From: m.From}
		if err := r.emit(ctx, drydock.EventLog, n); err != nil {
			return err
		}
		r.inbox = r.inbox[1:]
	}
	return nil
}

// ask is the ask_user tool: it shows the question on the job and waits
// for a message or the timeout. The message itself is delivered by the
// next step, like any other, so it is read once.
func (r *run) ask(ctx context.Context, question string) (string, error) {
	const answered = "The user answered; their message follows."
	if err := r.fetchInbox(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("read the job's messages", "err", err)
	}
	if len(r.inbox) > 0 {
		return "A message from the user came in before your question was shown; it follows. Ask again if it does not answer your question.", nil
	}
	if err := r.ar.Ask(ctx, question); err != nil {
		return "", fmt.Errorf("show the question: %w", err)
	}
	defer func() {
		// Cleared however the wait ends, even when the job is being
		// cancelled; FinishJob clears it too.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.ar.Ask(cctx, ""); err != nil {
			r.log.Warn("clear waiting_for", "err", err)
		}
	}()
	if err := r.emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Message: "The agent asks: " + question,
		Kind: drydock.LogAskUser, Question: question, Step: r.steps}); err != nil {
		return "", err
	}
	timeout := r.a.cfg.AskTimeout
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(askPoll)
	defer tick.Stop()
	for {
		if err := r.fetchInbox(ctx); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			r.log.Warn("read the job's messages", "err", err)
		}
		if len(r.inbox) > 0 {
			return answered, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-deadline.C:
			return fmt.Sprintf("Nobody answered within %s. Do not ask again; go on with your best judgement and state what you assumed in the final summary.", timeout), nil
		case <-tick.C:
		}
	}
}

// clearStaleQuestion clears the waiting_for a previous run left when it
// stopped during ask_user: that call is answered as interrupted.
func (r *run) clearStaleQuestion(ctx context.Context) {
	if r.ar.Job.WaitingFor == "" || r.ar.Ask == nil {
		return
	}
	if err := r.ar.Ask(ctx, ""); err != nil {
		r.log.Warn("clear waiting_for", "err", err)
	}
}
