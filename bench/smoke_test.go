package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

// drydockBin is the built drydock binary (DRYDOCK_TEST_BIN names it or
// the directory holding it), or skips.
func drydockBin(t *testing.T) string {
	bin := os.Getenv("DRYDOCK_TEST_BIN")
	if bin == "" {
		t.Skip("DRYDOCK_TEST_BIN is not set: build with make build and point it at bin/drydock")
	}
	if fi, err := os.Stat(bin); err == nil && fi.IsDir() {
		bin = filepath.Join(bin, "drydock")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("drydock binary: %v", err)
	}
	return bin
}

// A tiny run of every engine measure on Docker measures what it says, and
// leaves no sandbox behind.
func TestSmokeDocker(t *testing.T) {
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST is not set; start an engine with scripts/testenv/docker-up.sh")
	}
	bin := drydockBin(t)
	s, err := New(Options{
		Hosts: []string{host}, N: 2, RoundTrips: 5, Bin: bin, ArchiveMiB: 4,
		DensityMax: 2, DensityReserveMiB: 512, DensitySettle: time.Second, AgentSteps: 5,
		Images: map[drydock.Profile]string{
			drydock.ProfileHeadless: os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS"),
			drydock.ProfileDesktop:  os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP"),
		},
		Log: testWriter{t},
	}, "test", "smoke")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	if err := s.Run(ctx, "sandbox", "tools", "archive", "schedule", "density"); err != nil {
		t.Fatal(err)
	}
	r := s.Report()
	for _, k := range [][4]string{
		{"sandbox.ready", "docker", "headless", "core"},
		{"sandbox.ready", "docker", "desktop", "vnc"},
		{"sandbox.first_python", "docker", "desktop", ""},
		{"schedule.first_tool_call", "docker", "headless", "cold"},
		{"schedule.first_tool_call", "docker", "desktop", "cold"},
		{"archive.throughput", "docker", "", "tar+gzip+store"},
		{"density.memory", "docker", "desktop", ""},
	} {
		res, ok := r.Find(k[0], k[1], k[2], k[3])
		if !ok || res.Dist == nil || res.Dist.N != 2 || res.Dist.P50 <= 0 {
			t.Errorf("%v: %+v", k, res)
		}
	}
	if res, ok := r.Find("tools.roundtrip", "docker", "", "docker-exec"); !ok || res.Dist.N != 5 {
		t.Errorf("docker exec round trips: %+v", res)
	}
	if res, ok := r.Find("tools.speedup", "docker", "", ""); !ok || res.Value == nil || *res.Value <= 1 {
		t.Errorf("toolboxd must beat docker exec: %+v", res)
	}
	if res, _ := r.Find("density.sandboxes", "docker", "desktop", ""); res.Value == nil || *res.Value != 2 {
		t.Errorf("density: %+v", res)
	}
	// A desktop sandbox holds Xvfb, a window manager, x11vnc and a Python
	// kernel: tens of MiB, not a few and not gigabytes.
	if res, _ := r.Find("density.memory", "docker", "desktop", ""); res.Dist == nil || res.Dist.P50 < 20 || res.Dist.Max > 1024 {
		t.Errorf("desktop sandbox memory: %+v", res)
	}
	if warm, ok := r.Find("schedule.first_tool_call", "docker", "headless", "warm"); !ok || (warm.Unavailable == "" && (warm.Dist == nil || warm.Dist.N != 2)) {
		t.Errorf("warm: measured or said unavailable, got %+v", warm)
	}

	cli, err := client.New(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	left, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", drydock.LabelServer+"="+s.serverID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d sandboxes left behind", len(left.Items))
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
