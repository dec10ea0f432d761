package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/drydockhq/drydock"
)

// EgressCmd shows or changes what a job's sandbox may reach.
type EgressCmd struct {
	ID     string   `arg:"" name:"id" help:"Job id."`
	Allow  []string `name:"allow" placeholder:"HOST[:PORT]" help:"Allow a destination: host[:port], *.domain, an address or a CIDR. Repeatable."`
	Remove []string `name:"remove" placeholder:"HOST[:PORT]" help:"Remove a destination, as it appears in the list. Repeatable."`
	Clear  bool     `name:"clear" help:"Start from an empty list (alone: deny everything)."`
	JSON   bool     `name:"json" help:"Print the job as returned by the server."`
}

func (c *EgressCmd) Run(g *Globals) error {
	ctx, _, stop := g.signalContext()
	defer stop()
	cl := g.Client()
	j, err := cl.Job(ctx, c.ID)
	if err != nil {
		return g.explain(err, c.ID)
	}
	if len(c.Allow) > 0 || len(c.Remove) > 0 || c.Clear {
		list := slices.Clone(j.Egress)
		if c.Clear {
			list = nil
		}
		for _, r := range c.Remove {
			r = strings.TrimSpace(r)
			if !slices.Contains(list, r) {
				return drydock.Errorf(drydock.EINVALID, "%q is not in the egress list of job %s (it has: %s)", r, safe(j.ID), listOrNone(j.Egress))
			}
			list = slices.DeleteFunc(list, func(e string) bool { return e == r })
		}
		for _, a := range c.Allow {
			a = strings.TrimSpace(a)
			if _, err := drydock.ParseEgressRule(a); err != nil {
				return err
			}
			if !slices.Contains(list, a) {
				list = append(list, a)
			}
		}
		// The server replaces the whole list: a change made by someone
		// else between the read above and this write is overwritten.
		if j, err = cl.SetEgress(ctx, c.ID, list); err != nil {
			return g.explain(err, c.ID)
		}
	}
	out := g.out()
	if c.JSON {
		return writeJSON(out, j)
	}
	from := ""
	if j.EgressSource == drydock.EgressFromDefault {
		from = " (the server's default)"
	}
	if len(j.Egress) == 0 {
		_, err = fmt.Fprintf(out, "Job %s may reach nothing on the network%s.\n", safe(j.ID), from)
		return err
	}
	_, err = fmt.Fprintf(out, "Job %s may reach%s: %s\n", safe(j.ID), from, listOrNone(j.Egress))
	return err
}

// listOrNone shows an egress list from the server, escaped.
func listOrNone(l []string) string {
	if len(l) == 0 {
		return "nothing"
	}
	return safe(strings.Join(l, ", "))
}
