package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// Memory is what one sandbox's cgroup holds, in bytes.
type Memory struct {
	// Used is the cgroup's usage less the page cache the kernel can drop:
	// what the sandbox costs the host. tmpfs pages (shmem) stay in it,
	// since they cannot be dropped.
	Used  int64 `json:"used"`
	Usage int64 `json:"usage"` // the cgroup's whole charge
	Anon  int64 `json:"anon"`
	Shmem int64 `json:"shmem"`
	Cache int64 `json:"cache"` // droppable file pages
	// Shim is the proportional set size of the engine's per-container
	// process outside the cgroup (containerd-shim for Docker, conmon for
	// Podman): part of what each sandbox costs the host.
	Shim int64 `json:"shim"`
	// EngineStats is what the engine's stats API gives after the usual
	// subtraction of its cache fields; Podman's compat API has no such
	// fields, so there it is the raw usage, page cache included.
	EngineStats int64 `json:"engine_stats"`
}

// memory reads a sandbox's cgroup on this host, the same way for every
// engine, and the engine's own figure beside it.
func (e *engine) memory(ctx context.Context, id string) (Memory, error) {
	in, err := e.rt.Client().ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return Memory{}, fmt.Errorf("inspect %s: %w", id, err)
	}
	if in.Container.State == nil || in.Container.State.Pid == 0 {
		return Memory{}, fmt.Errorf("sandbox %s has no running process", id)
	}
	m, err := cgroupMemory(in.Container.State.Pid)
	if err != nil {
		return Memory{}, err
	}
	m.Shim = shimPss(in.Container.State.Pid)
	if m.EngineStats, err = e.statsMemory(ctx, id); err != nil {
		return Memory{}, err
	}
	return m, nil
}

// cgroupMemory reads the memory cgroup of process pid.
func cgroupMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("cgroup of pid %d: %w", pid, err)
	}
	v1, v2 := "", ""
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case strings.Contains(","+parts[1]+",", ",memory,"):
			v1 = parts[2]
		}
	}
	if v1 != "" {
		dir := filepath.Join("/sys/fs/cgroup/memory", v1)
		usage, err := readInt(filepath.Join(dir, "memory.usage_in_bytes"))
		if err != nil {
			return Memory{}, err
		}
		st, err := readStat(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return Memory{}, err
		}
		return memoryV1(usage, st), nil
	}
	if v2 != "" {
		dir := filepath.Join("/sys/fs/cgroup", v2)
		usage, err := readInt(filepath.Join(dir, "memory.current"))
		if err != nil {
			return Memory{}, err
		}
		st, err := readStat(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return Memory{}, err
		}
		return memoryV2(usage, st), nil
	}
	return Memory{}, fmt.Errorf("pid %d has no memory cgroup in /proc/%d/cgroup", pid, pid)
}

// shimPss is the PSS of pid's parent when that is the engine's shim
// (containerd-shim, conmon), 0 otherwise.
func shimPss(pid int) int64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	ppid := 0
	for line := range strings.SplitSeq(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err != nil || !(strings.Contains(string(comm), "shim") || strings.Contains(string(comm), "conmon")) {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", ppid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// memoryV1: "cache" counts every page-cache page, tmpfs included; only the
// part that is not shmem can be dropped.
func memoryV1(usage int64, st map[string]int64) Memory {
	cache := max(st["total_cache"]-st["total_shmem"], 0)
	return Memory{Used: max(usage-cache, 0), Usage: usage, Anon: st["total_rss"], Shmem: st["total_shmem"], Cache: cache}
}

// memoryV2: "file" counts page cache, shmem included.
func memoryV2(usage int64, st map[string]int64) Memory {
	cache := max(st["file"]-st["shmem"], 0)
	return Memory{Used: max(usage-cache, 0), Usage: usage, Anon: st["anon"], Shmem: st["shmem"], Cache: cache}
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read cgroup: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

func readStat(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cgroup: %w", err)
	}
	return parseStat(b), nil
}

func parseStat(b []byte) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out[f[0]] = n
		}
	}
	return out
}

// statsMemory is the engine's stats API figure as `docker stats` computes
// it: usage less the inactive file pages (cgroup v1: total_inactive_file,
// v2: inactive_file), or the raw usage when the engine sends no such field.
func (e *engine) statsMemory(ctx context.Context, id string) (int64, error) {
	st, err := e.rt.Client().ContainerStats(ctx, id, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		return 0, fmt.Errorf("stats of %s: %w", id, err)
	}
	defer st.Body.Close()
	var v struct {
		MemoryStats struct {
			Usage int64            `json:"usage"`
			Stats map[string]int64 `json:"stats"`
		} `json:"memory_stats"`
	}
	if err := json.NewDecoder(st.Body).Decode(&v); err != nil {
		return 0, fmt.Errorf("decode stats of %s: %w", id, err)
	}
	u := v.MemoryStats.Usage
	if x, ok := v.MemoryStats.Stats["total_inactive_file"]; ok && x < u {
		return u - x, nil
	}
	if x, ok := v.MemoryStats.Stats["inactive_file"]; ok && x < u {
		return u - x, nil
	}
	return u, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
