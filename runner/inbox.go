package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/drydockhq/drydock"
)

// inboxPage is how many events one read of the log takes.
const inboxPage = 1000

// inbox is AgentRun.Inbox for one run of one job: the
// user_message events stored after a seq. It remembers how far it has read,
// so each model step reads only the events appended since the last one
// rather than the log from the last message on. Seqs are gapless in commit
// order (Store.AppendEvent), so an event the read has passed can never
// appear later.
func (r *Runner) inbox(jobID string) func(ctx context.Context, after int64) ([]*drydock.Event, error) {
	var scanned int64
	return func(ctx context.Context, after int64) ([]*drydock.Event, error) {
		var msgs []*drydock.Event
		// Everything up to scanned that is newer than after was returned
		// by an earlier call; the agent asks from the newest it holds.
		from := max(after, scanned)
		for {
			page, err := r.deps.Store.ListEvents(ctx, jobID, from, inboxPage)
			if err != nil {
				return nil, fmt.Errorf("read messages of job %s: %w", jobID, err)
			}
			for _, e := range page {
				if e.Type == drydock.EventUserMessage && e.Seq > after {
					msgs = append(msgs, e)
				}
			}
			if len(page) > 0 {
				from = page[len(page)-1].Seq
				scanned = from
			}
			if len(page) < inboxPage {
				return msgs, nil
			}
		}
	}
}

// ask is AgentRun.Ask: the question the job's agent waits on, shown as the
// job's waiting_for.
func (r *Runner) ask(jobID string) func(ctx context.Context, question string) error {
	return func(ctx context.Context, question string) error {
		return r.deps.Store.SetWaitingFor(ctx, jobID, r.owner, question)
	}
}

// noteUndelivered records, as the job ends, each message its agent never
// received (it came during the last step, or while the workspace was being
// archived), so that a 202 is never followed by silence. A message stored
// after this read and before FinishJob commits (a few milliseconds) is not
// noted; one after FinishJob is refused by the store.
func (r *Runner) noteUndelivered(ctx context.Context, job *drydock.Job, emit drydock.Emitter, log *slog.Logger) {
	var msgs []int64
	delivered := map[int64]bool{}
	for after := int64(0); ; {
		page, err := r.deps.Store.ListEvents(ctx, job.ID, after, inboxPage)
		if err != nil {
			log.Warn("look for undelivered messages", "err", err)
			return
		}
		for _, e := range page {
			switch e.Type {
			case drydock.EventUserMessage:
				msgs = append(msgs, e.Seq)
			case drydock.EventLog:
				var n drydock.LogEvent
				if json.Unmarshal(e.Data, &n) == nil && n.Kind == drydock.LogMessageDelivered {
					delivered[n.Seq] = true
				}
			}
		}
		if len(page) < inboxPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	for _, seq := range msgs {
		if delivered[seq] {
			continue
		}
		emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "warn", Kind: drydock.LogMessageUndelivered, Seq: seq,
			Message: fmt.Sprintf("The message of event %d came after the agent's last step; it was not delivered.", seq)})
	}
}
