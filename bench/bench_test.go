package bench

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestPercentilesAreNearestRank(t *testing.T) {
	t.Parallel()
	var v []float64
	for i := 100; i >= 1; i-- {
		v = append(v, float64(i))
	}
	d := Values(v)
	if d.N != 100 || d.P50 != 50 || d.P95 != 95 || d.P99 != 99 || d.Min != 1 || d.Max != 100 || d.Mean != 50.5 {
		t.Errorf("1..100: %+v", d)
	}
	if v[0] != 100 {
		t.Error("Values sorted the caller's slice")
	}
	two := Durations([]time.Duration{30 * time.Millisecond, 10 * time.Millisecond})
	if two.P50 != 10 || two.P95 != 30 || two.P99 != 30 {
		t.Errorf("two samples: every percentile must be an observed sample, got %+v", two)
	}
	one := Durations([]time.Duration{1500 * time.Microsecond})
	if one.P50 != 1.5 || one.P99 != 1.5 {
		t.Errorf("one sample of 1.5 ms: %+v", one)
	}
	if (Values(nil) != Dist{}) {
		t.Error("no samples must give a zero Dist")
	}
}

func TestMemoryKeepsTmpfsAndDropsPageCache(t *testing.T) {
	t.Parallel()
	// cgroup v1: cache (30 MiB) includes 4 MiB of tmpfs, which cannot be
	// dropped and so counts.
	st := parseStat([]byte("cache 1\ntotal_cache 31457280\ntotal_shmem 4194304\ntotal_rss 73400320\nbogus line here\n"))
	m := memoryV1(104857600, st)
	if m.Cache != 27262976 || m.Used != 104857600-27262976 || m.Shmem != 4194304 || m.Anon != 73400320 {
		t.Errorf("v1: %+v", m)
	}
	// cgroup v2: file includes shmem the same way.
	m = memoryV2(100<<20, map[string]int64{"file": 30 << 20, "shmem": 4 << 20, "anon": 70 << 20})
	if m.Used != 74<<20 || m.Cache != 26<<20 {
		t.Errorf("v2: %+v", m)
	}
	// Never negative, whatever the kernel's rounding.
	if m := memoryV1(10, map[string]int64{"total_cache": 20}); m.Used != 0 {
		t.Errorf("cache above usage: %+v", m)
	}
}

func TestTargetsSayMetMissedOrWhyNotMeasured(t *testing.T) {
	t.Parallel()
	r := NewReport("test", "drydock bench all", nil)
	r.Machine.Engines = []Engine{{Name: "docker"}, {Name: "podman"}}
	r.Add(
		Result{Name: "tools.roundtrip", Engine: "docker", Mode: "toolboxd-session", Unit: "ms", Dist: &Dist{N: 5, P50: 0.9}},
		Result{Name: "tools.roundtrip", Engine: "podman", Mode: "toolboxd-session", Unit: "ms", Dist: &Dist{N: 5, P50: 7}, Note: "busy"},
		Result{Name: "schedule.first_tool_call", Engine: "docker", Profile: "headless", Mode: "warm", Unavailable: "no pool"},
		Result{Name: "schedule", Engine: "podman", Error: "engine gone"},
	)
	got := map[string]TargetStatus{}
	for _, s := range Check(r, Targets, []string{"tools", "schedule"}) {
		got[s.Target+"|"+s.Engine] = s
	}
	want := map[string]string{
		Targets[3].Text + "|docker": "met",
		Targets[3].Text + "|podman": "missed",
		Targets[0].Text + "|docker": "not measured",
		Targets[0].Text + "|podman": "not measured",
	}
	for k, status := range want {
		if got[k].Status != status {
			t.Errorf("%s: %+v, want %s", k, got[k], status)
		}
	}
	if s := got[Targets[3].Text+"|podman"]; s.Measured == nil || *s.Measured != 7 || s.Reason == "" {
		t.Errorf("a missed target must carry the figure and a reason: %+v", s)
	}
	if s := got[Targets[0].Text+"|docker"]; s.Reason != "no pool" {
		t.Errorf("unavailable reason lost: %+v", s)
	}
	if s := got[Targets[0].Text+"|podman"]; s.Reason != "the measure failed: engine gone" {
		t.Errorf("failure lost: %+v", s)
	}
	for k := range got {
		if k == Targets[9].Text+"|" {
			t.Error("a target of a measure that was not run is listed")
		}
	}
}

func TestReportJSONShape(t *testing.T) {
	t.Parallel()
	r := NewReport("v1", "drydock bench api", nil)
	r.Add(Result{Name: "api.schedule", Unit: "ms", Dist: &Dist{N: 3, P50: 1, P95: 2, P99: 3}},
		Result{Name: "api.schedule_throughput", Unit: "/s", Value: ptr(1234)})
	r.Finish(Targets, []string{"api"})
	path := t.TempDir() + "/r.json"
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version string `json:"version"`
		Command string `json:"command"`
		Machine struct {
			CPUs        int   `json:"cpus"`
			MemTotalMiB int64 `json:"mem_total_mib"`
		} `json:"machine"`
		Results []map[string]json.RawMessage `json:"results"`
		Targets []TargetStatus               `json:"targets"`
	}
	b := readFile(t, path)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != "v1" || v.Command != "drydock bench api" || v.Machine.CPUs < 1 || v.Machine.MemTotalMiB < 1 {
		t.Errorf("header: %+v", v)
	}
	if len(v.Results) != 2 {
		t.Fatalf("results: %s", b)
	}
	var d Dist
	if err := json.Unmarshal(v.Results[0]["dist"], &d); err != nil || d.P99 != 3 {
		t.Errorf("dist: %s %v", v.Results[0]["dist"], err)
	}
	if _, ok := v.Results[0]["value"]; ok {
		t.Error("a distribution must not carry a value")
	}
	var val float64
	if err := json.Unmarshal(v.Results[1]["value"], &val); err != nil || math.Abs(val-1234) > 0 {
		t.Errorf("value: %s", v.Results[1]["value"])
	}
	if len(v.Targets) != 1 || v.Targets[0].Status != "met" {
		t.Errorf("targets of an api run: %+v", v.Targets)
	}
}
