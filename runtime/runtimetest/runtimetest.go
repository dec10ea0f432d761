package runtimetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// Options configures the suite.
type Options struct {
	// Image is the image sandboxes are created from; empty leaves the
	// backend's default.
	Image string
	// Profile defaults to headless.
	Profile drydock.Profile
	// Resources for every sandbox; zero fields take the backend's defaults.
	Resources drydock.Resources
	// ReadyTimeout bounds the wait for toolboxd's health; default 60 s.
	ReadyTimeout time.Duration
	// FailingSpec turns a valid spec into one that Create must reject after
	// it has started allocating (for containers: an image that does not
	// exist). Nil skips the cleanup-on-failure test.
	FailingSpec func(drydock.SandboxSpec) drydock.SandboxSpec
	// ClaimSpec, when set, turns the spec of a warm sandbox for the Claim
	// cases into one whose toolboxd can be claimed (a backend whose Image
	// runs a stand-in for toolboxd).
	ClaimSpec func(drydock.SandboxSpec) drydock.SandboxSpec
}

// Run runs the conformance suite against the runtimes newRuntime returns. It
// calls newRuntime more than once: every instance must see the same
// sandboxes, as an orchestrator does after a restart.
func Run(t *testing.T, newRuntime func(t *testing.T) drydock.Runtime, opts Options) {
	if opts.Profile == "" {
		opts.Profile = drydock.ProfileHeadless
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	s := &suite{newRuntime: newRuntime, opts: opts}
	t.Run("Lifecycle", s.testLifecycle)
	t.Run("ListByLabels", s.testListByLabels)
	t.Run("GetAfterRestart", s.testGetAfterRestart)
	t.Run("DestroyUnknown", s.testDestroyUnknown)
	t.Run("FailedCreateLeavesNothing", s.testFailedCreate)
	t.Run("InvalidSpec", s.testInvalidSpec)
	t.Run("Claim", s.testClaim)
}

type suite struct {
	newRuntime func(t *testing.T) drydock.Runtime
	opts       Options
}

// spec returns a spec with a job id and a run label unique to this test, so
// that suites running side by side against one engine never see each
// other's sandboxes.
func (s *suite) spec(t *testing.T) drydock.SandboxSpec {
	return drydock.SandboxSpec{
		JobID:     "rtt-" + drydock.RandomHex(6),
		Image:     s.opts.Image,
		Profile:   s.opts.Profile,
		Resources: s.opts.Resources,
		Env:       map[string]string{"DRYDOCK_TEST": "1"},
		Labels:    map[string]string{"drydock.test.case": t.Name()[:min(len(t.Name()), 60)]},
	}
}

// create makes a sandbox and destroys it when the test ends, whatever
// happens in between.
func (s *suite) create(t *testing.T, rt drydock.Runtime, spec drydock.SandboxSpec) *drydock.Sandbox {
	t.Helper()
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Destroy(ctx, sb.ID); err != nil {
			t.Errorf("cleanup: Destroy %s: %v", sb.ID, err)
		}
	})
	return sb
}

func (s *suite) testLifecycle(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t)
	spec := s.spec(t)
	sb := s.create(t, rt, spec)

	if sb.ID == "" {
		t.Fatal("Create returned an empty id")
	}
	if sb.Runtime != rt.Name() {
		t.Errorf("Runtime = %q, want %q", sb.Runtime, rt.Name())
	}
	if sb.Profile != spec.Profile {
		t.Errorf("Profile = %q, want %q", sb.Profile, spec.Profile)
	}
	if sb.Token == "" {
		t.Error("Create returned no token")
	}
	if sb.Endpoint.Network == "" || sb.Endpoint.Address == "" {
		t.Errorf("Create returned no endpoint: %+v", sb.Endpoint)
	}
	if sb.CreatedAt.IsZero() {
		t.Error("CreatedAt is zero")
	}
	checkLabels(t, sb, spec)

	got, err := rt.Get(t.Context(), sb.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.ID != sb.ID || got.Token != sb.Token || got.Endpoint != sb.Endpoint || got.Profile != sb.Profile {
		t.Errorf("Get = {id %s endpoint %+v profile %s token set %t}, want {id %s endpoint %+v profile %s, the same token}",
			got.ID, got.Endpoint, got.Profile, got.Token != "", sb.ID, sb.Endpoint, sb.Profile)
	}
	checkLabels(t, got, spec)

	ctx, cancel := context.WithTimeout(t.Context(), s.opts.ReadyTimeout)
	defer cancel()
	start := time.Now()
	if err := WaitHealthy(ctx, got); err != nil {
		t.Fatalf("toolboxd not healthy: %v", err)
	}
	t.Logf("toolboxd healthy %v after Create returned", time.Since(start).Round(time.Millisecond))

	if got, err := rt.Get(t.Context(), sb.ID); err != nil {
		t.Fatalf("Get: %v", err)
	} else if got.State != drydock.SandboxRunning {
		t.Errorf("State = %q once healthy, want running", got.State)
	}

	list, err := rt.List(t.Context(), map[string]string{drydock.LabelJob: spec.JobID})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if ids := sandboxIDs(list); !slices.Equal(ids, []string{sb.ID}) {
		t.Errorf("List by job = %v, want [%s]", ids, sb.ID)
	}

	if err := rt.Destroy(t.Context(), sb.ID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if _, err := rt.Get(t.Context(), sb.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("Get after Destroy: err = %v, want code %s", err, drydock.ENOTFOUND)
	}
	list, err = rt.List(t.Context(), map[string]string{drydock.LabelJob: spec.JobID})
	if err != nil {
		t.Fatalf("List after Destroy: %v", err)
	}
	if len(list) != 0 {
		t.Errorf("List after Destroy = %v, want none", sandboxIDs(list))
	}
	if err := Probe(t.Context(), sb); err == nil {
		t.Error("toolboxd still answers after Destroy")
	}
	if err := rt.Destroy(t.Context(), sb.ID); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
}

func (s *suite) testListByLabels(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t)
	run := "run-" + drydock.RandomHex(6)
	specA, specB := s.spec(t), s.spec(t)
	specA.Labels["drydock.test.run"] = run
	specB.Labels["drydock.test.run"] = run
	specB.Labels["drydock.test.only-b"] = "yes"
	a := s.create(t, rt, specA)
	b := s.create(t, rt, specB)
	if a.ID == b.ID {
		t.Fatalf("two sandboxes share id %s", a.ID)
	}
	if a.Token == b.Token {
		t.Error("two sandboxes share a token")
	}
	if a.Endpoint == b.Endpoint {
		t.Errorf("two sandboxes share endpoint %+v", a.Endpoint)
	}

	both := sortedIDs(a.ID, b.ID)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"shared label", map[string]string{"drydock.test.run": run}, both},
		{"job A", map[string]string{drydock.LabelJob: specA.JobID}, []string{a.ID}},
		{"shared and job B", map[string]string{"drydock.test.run": run, drydock.LabelJob: specB.JobID}, []string{b.ID}},
		{"managed and only-b", map[string]string{drydock.LabelManaged: "true", "drydock.test.run": run, "drydock.test.only-b": "yes"}, []string{b.ID}},
		{"shared label, other value", map[string]string{"drydock.test.run": run + "-other"}, nil},
		{"job A, label of B", map[string]string{drydock.LabelJob: specA.JobID, "drydock.test.only-b": "yes"}, nil},
	} {
		list, err := rt.List(t.Context(), tc.labels)
		if err != nil {
			t.Fatalf("%s: List: %v", tc.name, err)
		}
		if got := sandboxIDs(list); !slices.Equal(got, tc.want) {
			t.Errorf("%s: List = %v, want %v", tc.name, got, tc.want)
		}
		for _, sb := range list {
			if sb.Runtime != rt.Name() {
				t.Errorf("%s: listed sandbox runtime %q, want %q", tc.name, sb.Runtime, rt.Name())
			}
			want := specA
			if sb.ID == b.ID {
				want = specB
			}
			checkLabels(t, sb, want)
		}
	}
}

// An orchestrator that restarts builds a new Runtime and must find its
// sandboxes, their endpoints and their tokens again.
func (s *suite) testGetAfterRestart(t *testing.T) {
	t.Parallel()
	first := s.newRuntime(t)
	spec := s.spec(t)
	sb := s.create(t, first, spec)

	second := s.newRuntime(t)
	got, err := second.Get(t.Context(), sb.ID)
	if err != nil {
		t.Fatalf("Get from a new runtime: %v", err)
	}
	if got.Token != sb.Token || got.Endpoint != sb.Endpoint {
		t.Errorf("new runtime sees endpoint %+v and token set %t, want %+v and the same token", got.Endpoint, got.Token != "", sb.Endpoint)
	}
	ctx, cancel := context.WithTimeout(t.Context(), s.opts.ReadyTimeout)
	defer cancel()
	if err := WaitHealthy(ctx, got); err != nil {
		t.Fatalf("toolboxd not healthy through the recovered endpoint: %v", err)
	}
	list, err := second.List(t.Context(), map[string]string{drydock.LabelJob: spec.JobID})
	if err != nil {
		t.Fatalf("List from a new runtime: %v", err)
	}
	if len(list) != 1 || list[0].Token != sb.Token {
		t.Errorf("List from a new runtime = %v (token recovered: %t), want [%s] with its token",
			sandboxIDs(list), len(list) == 1 && list[0].Token == sb.Token, sb.ID)
	}
	if err := second.Destroy(t.Context(), sb.ID); err != nil {
		t.Fatalf("Destroy from a new runtime: %v", err)
	}
	if _, err := first.Get(t.Context(), sb.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("first runtime's Get after the second destroyed it: %v, want %s", err, drydock.ENOTFOUND)
	}
}

func (s *suite) testDestroyUnknown(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t)
	for _, id := range []string{"no-such-sandbox", "drydock-0000000000000000", "../../etc", ""} {
		if err := rt.Destroy(t.Context(), id); err != nil {
			t.Errorf("Destroy(%q) = %v, want nil", id, err)
		}
		if _, err := rt.Get(t.Context(), id); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("Get(%q) = %v, want code %s", id, err, drydock.ENOTFOUND)
		}
	}
}

func (s *suite) testFailedCreate(t *testing.T) {
	if s.opts.FailingSpec == nil {
		t.Skip("no FailingSpec given for this runtime")
	}
	t.Parallel()
	rt := s.newRuntime(t)
	spec := s.opts.FailingSpec(s.spec(t))
	sb, err := rt.Create(t.Context(), spec)
	if err == nil {
		_ = rt.Destroy(context.WithoutCancel(t.Context()), sb.ID)
		t.Fatal("Create with the failing spec succeeded")
	}
	t.Logf("Create failed as expected: %v", err)
	list, err := rt.List(t.Context(), map[string]string{drydock.LabelJob: spec.JobID})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 0 {
		t.Errorf("failed Create left sandboxes behind: %v", sandboxIDs(list))
	}
}

func (s *suite) testInvalidSpec(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t)
	spec := s.spec(t)
	spec.Profile = "no-such-profile"
	sb, err := rt.Create(t.Context(), spec)
	if err == nil {
		_ = rt.Destroy(context.WithoutCancel(t.Context()), sb.ID)
		t.Fatal("Create with an unknown profile succeeded")
	}
	if code := drydock.ErrorCode(err); code != drydock.EINVALID {
		t.Errorf("Create with an unknown profile: code %s (%v), want %s", code, err, drydock.EINVALID)
	}
}

func checkLabels(t *testing.T, sb *drydock.Sandbox, spec drydock.SandboxSpec) {
	t.Helper()
	want := map[string]string{drydock.LabelManaged: "true", drydock.LabelJob: spec.JobID}
	for k, v := range spec.Labels {
		want[k] = v
	}
	for k, v := range want {
		if got, ok := sb.Labels[k]; !ok || got != v {
			t.Errorf("sandbox %s label %s = %q (present %t), want %q", sb.ID, k, got, ok, v)
		}
	}
	if _, ok := sb.Labels[drydock.LabelServer]; !ok {
		t.Errorf("sandbox %s has no %s label", sb.ID, drydock.LabelServer)
	}
}

// WaitHealthy polls toolboxd's health at the sandbox's endpoint until it
// answers 200 or ctx ends.
func WaitHealthy(ctx context.Context, sb *drydock.Sandbox) error {
	var last error
	for {
		if last = Probe(ctx, sb); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last probe: %v)", ctx.Err(), last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Probe makes one GET /v1/health to the sandbox's toolboxd with its token.
func Probe(ctx context.Context, sb *drydock.Sandbox) error {
	hc := HTTPClient(sb.Endpoint)
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, BaseURL(sb.Endpoint)+"/v1/health", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+sb.Token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s: %s", resp.Status, body)
	}
	return nil
}

// HTTPClient returns a client that dials the endpoint whatever URL host it
// is given; use it with BaseURL.
func HTTPClient(ep drydock.Endpoint) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, ep.Network, ep.Address)
		},
		DisableKeepAlives: true,
	}}
}

// BaseURL is the URL prefix for HTTPClient: the endpoint's address for TCP,
// a placeholder host for unix sockets.
func BaseURL(ep drydock.Endpoint) string {
	if ep.Network == "tcp" {
		return "http://" + ep.Address
	}
	return "http://toolboxd"
}

func sandboxIDs(list []*drydock.Sandbox) []string {
	var ids []string
	for _, sb := range list {
		ids = append(ids, sb.ID)
	}
	slices.Sort(ids)
	return ids
}

func sortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}
