package bench

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

// isolationSuite is a suite with tiny counts against the test Docker
// engine, or skips.
func isolationSuite(t *testing.T, log func(string)) (*Suite, string) {
	t.Helper()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST is not set; start an engine with scripts/testenv/docker-up.sh")
	}
	s, err := New(Options{
		Hosts: []string{host}, N: 1, RoundTrips: 3, ArchiveMiB: 1, DensityMax: 1, AgentSteps: 2,
		IsolationIdle: 1, DensityReserveMiB: 512, DensitySettle: time.Second,
		Images: map[drydock.Profile]string{
			drydock.ProfileHeadless: os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS"),
			drydock.ProfileDesktop:  os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP"),
		},
		Log: logFunc(func(s string) { t.Log(s); log(s) }),
	}, "test", "drydock bench isolation")
	if err != nil {
		t.Fatal(err)
	}
	return s, host
}

type logFunc func(string)

func (f logFunc) Write(p []byte) (int, error) { f(string(p)); return len(p), nil }

// leftOver counts the containers on host that carry the suite's server id.
func leftOver(t *testing.T, host, serverID string) int {
	t.Helper()
	cli, err := client.New(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	left, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", drydock.LabelServer+"="+serverID)})
	if err != nil {
		t.Fatal(err)
	}
	return len(left.Items)
}

// One tiny run measures every figure under runc and under gVisor on the
// same engine (gVisor only when the engine has runsc, and then said so),
// pairs them with their ratio, and leaves no sandbox behind.
func TestSmokeIsolation(t *testing.T) {
	s, host := isolationSuite(t, func(string) {})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if err := s.Run(ctx, "isolation"); err != nil {
		t.Fatal(err)
	}
	r := s.Report()
	gvisor := true
	if res, _ := r.Find("isolation.cold_start", "docker", "headless", "gvisor"); res.Unavailable != "" {
		t.Logf("gVisor is not measured on this engine: %s", res.Unavailable)
		gvisor = false
	}
	for _, iso := range Isolations {
		if iso == drydock.IsolationGVisor && !gvisor {
			continue
		}
		for _, name := range []string{"isolation.cold_start", "isolation.warm_claim", "isolation.first_python", "isolation.first_kernel"} {
			if res, ok := r.Find(name, "docker", "headless", iso); !ok || res.Dist == nil || res.Dist.N != 1 || res.Dist.P50 <= 0 {
				t.Errorf("%s %s: %+v", name, iso, res)
			}
		}
		if res, _ := r.Find("isolation.tool_roundtrip", "docker", "headless", iso); res.Dist == nil || res.Dist.N != 3 {
			t.Errorf("round trips %s: %+v", iso, res)
		}
		// toolboxd, its shell and a Python kernel: tens of MiB, not a few
		// and not gigabytes, under either runtime.
		if res, _ := r.Find("isolation.idle_memory", "docker", "headless", iso); res.Dist == nil || res.Dist.P50 < 10 || res.Dist.Max > 2048 {
			t.Errorf("idle memory %s: %+v", iso, res)
		}
		if res, _ := r.Find("isolation.density", "docker", "headless", iso); res.Value == nil || *res.Value < 1 {
			t.Errorf("density %s: %+v", iso, res)
		}
	}
	ratios := 0
	for _, c := range r.Comparisons {
		if c.Ratio != nil {
			ratios++
		}
	}
	if gvisor && ratios < len(isolationResults) {
		t.Errorf("%d ratios in %+v", ratios, r.Comparisons)
	}
	if n := leftOver(t, host, s.serverID); n != 0 {
		t.Errorf("%d sandboxes left behind", n)
	}
}

// Ctrl-C while a warm pool is filling and a claimed sandbox may be alive
// still destroys every sandbox the run made.
func TestIsolationCleansUpOnCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var once sync.Once
	s, host := isolationSuite(t, func(line string) {
		if strings.Contains(line, "warm claim 1/") {
			// Let the pool start its sandbox first.
			once.Do(func() { time.AfterFunc(time.Second, cancel) })
		}
	})
	err := s.Run(ctx, "isolation")
	if err == nil {
		t.Fatal("a cancelled run reported no error")
	}
	if n := leftOver(t, host, s.serverID); n != 0 {
		t.Errorf("%d sandboxes left behind after Ctrl-C", n)
	}
}
