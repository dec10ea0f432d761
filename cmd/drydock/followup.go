package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// FollowUpCmd continues a finished job: a new job from its workspace and
// its conversation, with a new message.
type FollowUpCmd struct {
	ID        string            `arg:"" help:"The finished job to continue."`
	Text      string            `arg:"" help:"What the agent should do next, or - to read it from standard input."`
	Model     string            `help:"Model to use (default: the parent's)."`
	MaxSteps  int               `name:"max-steps" help:"Most agent steps of this job (default: the server's; the parent's steps do not count)."`
	Timeout   time.Duration     `help:"Wall-time limit, e.g. 15m (default: the server's)."`
	Profile   string            `help:"Sandbox profile: headless or desktop (default: the parent's)."`
	Budget    int               `name:"context-budget" placeholder:"TOKENS" help:"Most tokens of each prompt (default: the parent's)."`
	Meta      map[string]string `help:"Metadata, KEY=VALUE; repeatable; replaces the parent's (default: the parent's)." placeholder:"KEY=VALUE" mapsep:"none"`
	Egress    []string          `placeholder:"HOST[:PORT]" xor:"egress" help:"A destination the sandbox may reach; repeatable; replaces the parent's list (default: the parent's)."`
	NoEgress  bool              `name:"no-egress" xor:"egress" help:"The sandbox may reach nothing on the network."`
	Secrets   SecretFlags       `embed:""`
	NoSecrets bool              `name:"no-secrets" help:"Continue without secrets. Without --secret or this flag the follow-up inherits the parent's secrets while the server keeps them (--follow-up-secrets, 24h after the parent ended); after that it needs them again (--secret) or this flag."`
	Follow    bool              `short:"f" xor:"mode" help:"Show progress live until the job ends; exit 1 if it fails or is cancelled."`
	Wait      bool              `xor:"mode" help:"Wait silently until the job ends and print its final status; exit 1 if it fails or is cancelled."`
	JSON      bool              `name:"json" help:"Print JSON."`
	Key       string            `name:"idempotency-key" placeholder:"KEY" help:"Send KEY as the request's Idempotency-Key (default: a random one); running the command again with it returns the follow-up the first run created."`
}

// Help is the long help of `drydock follow-up --help`.
func (c *FollowUpCmd) Help() string {
	return `Creates a job that continues a finished one (complete, error or cancelled): its workspace starts as
the finished job's archived workspace, and its agent starts from the conversation so far (the first
task, every earlier job's steps and messages), followed by TEXT. Model, profile, egress, context budget
and metadata are the parent's unless given; the step and time limits are the server's unless given.
The new job's id is printed; drydock status shows the thread (Follows up, Follow-ups).`
}

func (c *FollowUpCmd) request(g *Globals) (client.FollowUpRequest, error) {
	text := c.Text
	if text == "-" {
		b, err := io.ReadAll(io.LimitReader(g.in(), drydock.MaxMessageBytes+1))
		if err != nil {
			return client.FollowUpRequest{}, fmt.Errorf("read the message from standard input: %w", err)
		}
		text = string(b)
	}
	if err := drydock.ValidateMessageText(text); err != nil {
		return client.FollowUpRequest{}, fmt.Errorf("%s", drydock.ErrorMessage(err))
	}
	req := client.FollowUpRequest{Text: text, Model: c.Model, MaxSteps: c.MaxSteps, Timeout: drydock.Duration(c.Timeout),
		Profile: drydock.Profile(c.Profile), ContextBudget: c.Budget, Metadata: c.Meta, Egress: c.Egress}
	if c.NoEgress {
		req.Egress = []string{}
	}
	secrets, err := c.Secrets.values(os.LookupEnv)
	if err != nil {
		return req, err
	}
	switch {
	case c.NoSecrets && secrets != nil:
		return req, errors.New("--no-secrets and --secret/--secret-file contradict each other")
	case c.NoSecrets:
		secrets = drydock.SecretValues{}
	}
	req.Secrets = secrets
	return req, nil
}

func (c *FollowUpCmd) Run(g *Globals) error {
	req, err := c.request(g)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c.Key)
	if err != nil {
		return err
	}
	ctx, interrupted, stop := g.signalContext()
	defer stop()
	cl := g.Client()
	j, err := cl.FollowUp(ctx, c.ID, req, client.WithIdempotencyKey(key))
	if err != nil {
		var se *client.ScheduleError
		switch {
		case interrupted():
			return fmt.Errorf("interrupted; the server may have created the follow-up: run the command again with --idempotency-key %s to get it (this cannot create a second one)", shellWord(key))
		case errors.As(err, &se):
			return fmt.Errorf("%v; no answer after %d attempts, so the follow-up may or may not exist: running the command again with --idempotency-key %s is safe",
				g.explain(se.Err, c.ID), se.Attempts, shellWord(key))
		}
		return g.explain(err, c.ID)
	}
	return created{g: g, cl: cl, job: j, follow: c.Follow, wait: c.Wait, json: c.JSON, interrupted: interrupted,
		header: func(p *eventPrinter, out io.Writer) {
			fmt.Fprintf(out, "Follow-up %s of job %s  (%s)\n", ansi(p.color, bold, safe(j.ID)), safe(j.ParentJobID), safe(j.StatusURL))
		},
		footer: fmt.Sprintf("Follows up: %s\nStatus: %s\nFollow: drydock logs %s -f\n", safe(j.ParentJobID), safe(j.StatusURL), cmdWord(j.ID)),
	}.report(ctx)
}
