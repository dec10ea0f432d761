package agent

import (
	"encoding/json"
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
)

// A follow-up continues a finished job. The runner gives its
// ancestors' conversation as AgentRun.Prior; the run reads it as the start
// of its own log, so the prompt is built from it by the same Window, under
// the same budget (masked and summarised as any long log is), and a
// resumed run builds the same prompts again. The conversation becomes:
//
//   - the first message: the root job's task;
//   - each ancestor's steps, in order, each later ancestor's task as a
//     follow-up notice after the steps it continued;
//   - this job's message as a follow-up notice, then this job's own steps.
//
// Step numbers go on from the ancestors' (condensations and masks name
// steps), but only this job's own steps count against its step budget,
// its usage and the stuck detector, and only its own finish ends it.

// priorStart is where a run's log starts: the first message's task and
// the events before the job's own.
type priorStart struct {
	task   string
	events []*drydock.Event
	// steps is the last step number of the ancestors' conversation.
	steps int
}

// fromPrior reads AgentRun.Prior; a job that follows nothing up starts
// from its own task and no events.
func fromPrior(ar *drydock.AgentRun) priorStart {
	if len(ar.Prior) == 0 {
		return priorStart{task: ar.Job.Task}
	}
	var (
		p     priorStart
		ended priorTask // how the job before ended
	)
	for i, e := range ar.Prior {
		switch e.Type {
		case drydock.EventTask:
			var t priorTask
			if json.Unmarshal(e.Data, &t) != nil {
				continue
			}
			if i == 0 {
				p.task, ended = t.Text, t
				continue
			}
			p.events = append(p.events, followUpNotice(e.JobID, ended, t.Text))
			ended = t
		case drydock.EventModel:
			var t transcript.ModelTurn
			if json.Unmarshal(e.Data, &t) == nil {
				p.steps = max(p.steps, t.Step)
			}
			p.events = append(p.events, e)
		default:
			p.events = append(p.events, e)
		}
	}
	if p.task == "" {
		p.task = "(The task of the earlier work was not recorded; the conversation below shows what was done.)"
	}
	p.events = append(p.events, followUpNotice(ar.Job.ID, ended, ar.Job.Task))
	return p
}

// priorTask is the data of an EventTask: a job's task and how it ended.
type priorTask = drydock.TaskEvent

// followUpNotice is a job's message, shown to the model after the steps
// of the job it follows up, with how that one ended.
func followUpNotice(jobID string, ended priorTask, text string) *drydock.Event {
	how := "has ended"
	switch ended.Status {
	case drydock.StatusComplete:
		how = "is complete"
	case drydock.StatusCancelled:
		how = "was cancelled by the user"
	case drydock.StatusError:
		how = "ended with an error"
		if ended.Error != "" {
			how += ": " + ended.Error
		}
	}
	msg := fmt.Sprintf("# Follow-up\nThe work above %s. The user asks you to continue it; the workspace is as that work left it.\n\nYour task now:\n\n%s", how, text)
	return drydock.NewEvent(jobID, drydock.EventLog, transcript.Notice{Level: "info", Message: msg, Notice: true})
}

// own is the number of steps this job has made itself, which its budget
// counts and its progress reports.
func (r *run) own() int { return r.steps - r.priorSteps }
