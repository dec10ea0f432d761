package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/drydockhq/drydock"
)

// priorPage is how many events one read of an ancestor's log asks for.
const priorPage = 1000

// prior loads the conversation a follow-up continues (AgentRun.Prior):
// its ancestors, root first, each as an EventTask with its task followed
// by its events of the kinds a prompt is built from. A job that follows
// nothing up has none. The API bounds chains at creation; the bound here
// only keeps a store that was written otherwise from looping.
func (r *Runner) prior(ctx context.Context, job *drydock.Job) ([]*drydock.Event, error) {
	var chain []*drydock.Job
	for id := job.ParentJobID; id != ""; {
		if len(chain) >= drydock.MaxFollowUpDepth {
			return nil, drydock.Errorf(drydock.EINVALID, "job %s follows up a chain of more than %d jobs; a follow-up cannot start from it", job.ID, drydock.MaxFollowUpDepth)
		}
		up, err := r.deps.Store.GetJob(ctx, id)
		if drydock.ErrorCode(err) == drydock.ENOTFOUND {
			return nil, drydock.Errorf(drydock.EUNAVAILABLE, "job %s, which this job follows up, is no longer in the store; its conversation cannot be loaded", id)
		}
		if err != nil {
			return nil, fmt.Errorf("load job %s, which job %s follows up: %w", id, job.ID, err)
		}
		chain = append(chain, up)
		id = up.ParentJobID
	}
	slices.Reverse(chain)
	var out []*drydock.Event
	for _, a := range chain {
		out = append(out, drydock.NewEvent(a.ID, drydock.EventTask, drydock.TaskEvent{Text: a.Task, Status: a.Status, Error: a.Error}))
		for after := int64(0); ; {
			page, err := r.deps.Store.ListEvents(ctx, a.ID, after, priorPage)
			if err != nil {
				return nil, fmt.Errorf("load the event log of job %s, which job %s follows up: %w", a.ID, job.ID, err)
			}
			for _, e := range page {
				if slices.Contains(drydock.PriorKinds, e.Type) {
					out = append(out, e)
				}
			}
			if len(page) < priorPage {
				break
			}
			after = page[len(page)-1].Seq
		}
	}
	return out, nil
}
