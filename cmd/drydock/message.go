package main

import (
	"fmt"
	"io"

	"github.com/drydockhq/drydock"
)

// MessageCmd sends a message to a job's agent.
type MessageCmd struct {
	ID   string `arg:"" name:"id" help:"Job id."`
	Text string `arg:"" help:"The message, or - to read it from standard input (1 byte to 64 KiB of UTF-8 text; put -- before a message that starts with a dash)."`
	JSON bool   `name:"json" help:"Print the stored user_message event as returned by the server (or the follow-up job, for a finished job)."`
}

func (c *MessageCmd) Run(g *Globals) error {
	text := c.Text
	if text == "-" {
		b, err := io.ReadAll(io.LimitReader(g.in(), drydock.MaxMessageBytes+1))
		if err != nil {
			return fmt.Errorf("read the message from standard input: %w", err)
		}
		text = string(b)
	}
	if err := drydock.ValidateMessageText(text); err != nil {
		return fmt.Errorf("%s", drydock.ErrorMessage(err))
	}
	ctx, _, stop := g.signalContext()
	defer stop()
	res, err := g.Client().SendMessage(ctx, c.ID, text)
	if err != nil {
		return g.explain(err, c.ID)
	}
	if j := res.FollowUp; j != nil {
		if c.JSON {
			return writeJSON(g.out(), j)
		}
		fmt.Fprintf(g.out(), "Job %s has ended, so the message started follow-up job %s from its workspace and conversation (watch with: drydock logs %s -f).\n",
			safe(c.ID), safe(j.ID), cmdWord(j.ID))
		return nil
	}
	ev := res.Event
	if c.JSON {
		return writeJSON(g.out(), ev)
	}
	fmt.Fprintf(g.out(), "Sent to job %s (event %d); the agent reads it before its next model call (watch with: drydock logs %s -f).\n",
		safe(ev.JobID), ev.Seq, cmdWord(ev.JobID))
	return nil
}
