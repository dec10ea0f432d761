package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/egress"
)

// EgressOptions configure the egress proxy sandboxes reach the network
// through.
type EgressOptions struct {
	Private []string `env:"DRYDOCK_EGRESS_PRIVATE" placeholder:"CIDR" help:"Non-public addresses (CIDRs or addresses, comma-separated) that jobs' egress rules may reach, e.g. an internal package mirror. Loopback, private and link-local addresses are refused otherwise, whatever a job's list says."`
}

// egressSocketer is a runtime whose sandboxes reach the network only
// through the egress proxy's socket (runtime/docker).
type egressSocketer interface {
	EgressSocket(sb *drydock.Sandbox) (string, error)
}

// egressWiring connects the proxy to the store (the lists), the runtime
// (where each sandbox's socket goes) and the event log (refusals).
type egressWiring struct {
	proxy *egress.Proxy
	rt    drydock.Runtime
	log   *slog.Logger
}

func parsePrivate(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("--egress-private %q: want an address or a CIDR such as 10.1.0.0/16", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func newEgressWiring(opts EgressOptions, st drydock.Store, rt drydock.Runtime, log *slog.Logger) (*egressWiring, error) {
	private, err := parsePrivate(opts.Private)
	if err != nil {
		return nil, err
	}
	if len(private) > 0 {
		log.Warn("egress: jobs may reach these non-public addresses when their lists allow it", "private", private)
	}
	rep := &egress.Reporter{Store: st, Logger: log}
	proxy := egress.New(egress.Config{
		Rules: func(ctx context.Context, jobID string) ([]drydock.EgressRule, error) {
			job, err := st.GetJob(ctx, jobID)
			if err != nil {
				return nil, err
			}
			if job.Status.Terminal() {
				return nil, nil
			}
			return drydock.ParseEgress(job.Egress)
		},
		OnDeny:  rep.Deny,
		Private: private,
		Logger:  log,
	})
	if f, ok := rt.(forgetful); ok {
		rt = f.Runtime
	}
	return &egressWiring{proxy: proxy, rt: rt, log: log.With("component", "egress")}, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Open is runner.Deps.Egress: the sandbox's proxy listener, or its
// runtime's policy brought up to the job's list (a warm or reattached pod).
func (e *egressWiring) Open(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox) (io.Closer, error) {
	switch rt := e.rt.(type) {
	case egressSocketer:
		path, err := rt.EgressSocket(sb)
		if err != nil {
			return nil, err
		}
		return e.proxy.Listen(job.ID, path)
	case egress.Updater:
		return nopCloser{}, rt.UpdateEgress(ctx, sb.ID, job.Egress)
	}
	// The local runtime isolates nothing, the network included.
	return nopCloser{}, nil
}

// Changed is api.Config.EgressChanged. Replicas that run the job but did
// not serve the change see it within the proxy's cache and recheck times.
func (e *egressWiring) Changed(ctx context.Context, job *drydock.Job) {
	e.proxy.Changed(job.ID)
	if u, ok := e.rt.(egress.Updater); ok && job.SandboxID != "" {
		if err := u.UpdateEgress(ctx, job.SandboxID, job.Egress); err != nil {
			e.log.Warn("update the sandbox's network policy", "job_id", job.ID, "sandbox_id", job.SandboxID, "err", err)
		}
	}
}
