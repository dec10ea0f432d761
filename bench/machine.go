package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the figures were taken.
type Machine struct {
	CPUs        int        `json:"cpus"`
	CPUModel    string     `json:"cpu_model"`
	MemTotalMiB int64      `json:"mem_total_mib"`
	Kernel      string     `json:"kernel"`
	OS          string     `json:"os"`
	Go          string     `json:"go"`
	Cgroup      string     `json:"cgroup"`
	LoadStart   [3]float64 `json:"load_average_start"`
	LoadEnd     [3]float64 `json:"load_average_end"`
	Engines     []Engine   `json:"engines,omitempty"`
}

// Engine names one container engine measured.
type Engine struct {
	Name    string `json:"name"` // docker or podman
	Version string `json:"version"`
	Host    string `json:"host"`
}

// DescribeMachine reads what /proc and /etc say about this host.
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), LoadStart: LoadAverage(), Cgroup: cgroupVersion()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if mi, err := meminfo(); err == nil {
		m.MemTotalMiB = mi["MemTotal"] >> 20
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	return m
}

// String is the one-line description the CLI prints.
func (m Machine) String() string {
	s := fmt.Sprintf("%d CPUs (%s), %.1f GiB RAM, %s, kernel %s, cgroup %s, %s; load average %.2f %.2f %.2f",
		m.CPUs, m.CPUModel, float64(m.MemTotalMiB)/1024, m.OS, m.Kernel, m.Cgroup, m.Go, m.LoadStart[0], m.LoadStart[1], m.LoadStart[2])
	for _, e := range m.Engines {
		s += fmt.Sprintf("; %s %s", e.Name, e.Version)
	}
	return s
}

// LoadAverage is the 1, 5 and 15 minute load average (zeros when unknown).
func LoadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// MemAvailable is the kernel's estimate of memory available for new work,
// in bytes.
func MemAvailable() (int64, error) {
	mi, err := meminfo()
	if err != nil {
		return 0, err
	}
	v, ok := mi["MemAvailable"]
	if !ok {
		return 0, fmt.Errorf("no MemAvailable in /proc/meminfo")
	}
	return v, nil
}

// meminfo returns /proc/meminfo in bytes.
func meminfo() (map[string]int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, fmt.Errorf("read meminfo: %w", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		out[k] = n
	}
	return out, nil
}

func cgroupVersion() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "v2"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		return "v1"
	}
	return "unknown"
}
