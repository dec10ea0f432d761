package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/egress"
)

// EgressOptions configure the egress proxy sandboxes reach the network
// through.
type EgressOptions struct {
	Listen  string   `env:"DRYDOCK_EGRESS_LISTEN" placeholder:"ADDR" help:"Serve the egress gateway on this address (e.g. :3129): Kubernetes sandbox pods reach the network only through it, and it applies each job's allowlist by host name. Needed with --runtime kubernetes for jobs with egress; the pods dial --kube-egress-gateway."`
	Private []string `env:"DRYDOCK_EGRESS_PRIVATE" placeholder:"CIDR" help:"Non-public addresses (CIDRs or addresses, comma-separated) that jobs' egress rules may reach, e.g. an internal package mirror. Loopback, private and link-local addresses are refused otherwise, whatever a job's list says."`
	Default []string `env:"DRYDOCK_EGRESS_DEFAULT" placeholder:"HOST[:PORT]" help:"Egress allowlist (host[:port], *.domain, addresses or CIDRs, comma-separated) of every job that gives none, e.g. the package registries its tasks need. A job's own list (even []) replaces it."`
	Allow   []string `env:"DRYDOCK_EGRESS_ALLOW" placeholder:"HOST[:PORT]" help:"Ceiling of every job's egress list (same form as --egress-default): each entry a job asks for, at creation or later, must fall within one of these, or is refused with 403; the proxy enforces it on every connection too. Unset: jobs may list anything. Give it the same list as --egress-default to forbid widening."`
}

// policy checks --egress-default and --egress-allow.
func (o EgressOptions) policy() (drydock.EgressPolicy, error) {
	p, err := drydock.NewEgressPolicy(o.Default, o.Allow)
	if err != nil {
		msg := drydock.ErrorMessage(err)
		if rest, ok := strings.CutPrefix(msg, "ceiling: "); ok {
			return p, fmt.Errorf("--egress-allow: %s", rest)
		}
		return p, fmt.Errorf("--egress-default: %s (see --egress-allow)", strings.TrimPrefix(msg, "default: "))
	}
	return p, nil
}

// egressSocketer is a runtime whose sandboxes reach the network only
// through the egress proxy's socket (runtime/docker).
type egressSocketer interface {
	EgressSocket(sb *drydock.Sandbox) (string, error)
}

// egressWiring connects the proxy to the store (the lists), the runtime
// (where each sandbox's socket goes, or who a gateway's caller is) and the
// event log (refusals).
type egressWiring struct {
	proxy   *egress.Proxy
	gateway *egress.Gateway // nil without --egress-listen
	rt      drydock.Runtime
	st      drydock.Store
	log     *slog.Logger
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

func newEgressWiring(opts EgressOptions, policy drydock.EgressPolicy, st drydock.Store, rt drydock.Runtime, log *slog.Logger) (*egressWiring, error) {
	private, err := parsePrivate(opts.Private)
	if err != nil {
		return nil, err
	}
	if len(policy.Default) > 0 || policy.Ceiling != nil {
		log.Info("egress policy", "default", policy.Default, "ceiling", policy.CeilingList())
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
			// The job's list plus its repository's host and port.
			return job.EgressRules()
		},
		OnDeny:  rep.Deny,
		Private: private,
		Ceiling: policy.Allows,
		Logger:  log,
	})
	e := &egressWiring{proxy: proxy, rt: rt, st: st, log: log.With("component", "egress")}
	if opts.Listen != "" {
		ln, err := net.Listen("tcp", opts.Listen)
		if err != nil {
			return nil, fmt.Errorf("--egress-listen %s: %w", opts.Listen, err)
		}
		e.gateway = proxy.NewGateway(egress.GatewayConfig{Identify: e.identify})
		go e.gateway.Serve(ln)
		e.log.Info("egress gateway listening", "address", ln.Addr().String())
	}
	return e, nil
}

// identify is the gateway's lookup: the sandbox's token from the runtime,
// and its job, which must still have this sandbox as its own (a sandbox
// that outlived its job, or a job that moved on to another, gets nothing).
func (e *egressWiring) identify(ctx context.Context, sandboxID string) (string, string, error) {
	sb, err := e.rt.Get(ctx, sandboxID)
	if err != nil {
		return "", "", err
	}
	jobID := sb.Labels[drydock.LabelJob]
	if jobID == "" {
		return "", "", fmt.Errorf("sandbox %s belongs to no job", sandboxID)
	}
	job, err := e.st.GetJob(ctx, jobID)
	if err != nil {
		return "", "", err
	}
	if job.SandboxID != sandboxID {
		return "", "", fmt.Errorf("sandbox %s is not job %s's current sandbox", sandboxID, jobID)
	}
	return jobID, sb.Token, nil
}

// Close stops the gateway.
func (e *egressWiring) Close() error {
	if e.gateway == nil {
		return nil
	}
	return e.gateway.Close()
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Open is runner.Deps.Egress: the sandbox's proxy listener. A sandbox that
// reaches a gateway needs nothing opened (the gateway asks who it is on
// each connection), and the local runtime isolates nothing, the network
// included.
func (e *egressWiring) Open(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox) (io.Closer, error) {
	if rt, ok := e.rt.(egressSocketer); ok {
		path, err := rt.EgressSocket(sb)
		if err != nil {
			return nil, err
		}
		return e.proxy.Listen(job.ID, path)
	}
	return nopCloser{}, nil
}

// Changed is api.Config.EgressChanged. Replicas that run the job (or serve
// its gateway connections) but did not serve the change see it within the
// proxy's cache and recheck times.
func (e *egressWiring) Changed(ctx context.Context, job *drydock.Job) {
	e.proxy.Changed(job.ID)
}
