package kubernetes

import (
	"strconv"
	"strings"

	"github.com/drydockhq/drydock"
)

// The environment toolboxd reads to enforce the limits itself under gVisor
// (see cmd/toolboxd and runtime/docker's EnvMemoryLimit).
const (
	EnvMemoryLimit = "TOOLBOXD_MEMORY_LIMIT"
	EnvTasksLimit  = "TOOLBOXD_TASKS_LIMIT"
)

// gVisor's own processes on the node, as in runtime/docker's gvisorLimits:
// the sentry (its kernel), the gofer and systrap's stubs, all in the pod's
// cgroup.
const (
	// gvisorMemoryOverhead is the sentry's and gofer's memory on top of
	// the sandbox's (50-80 MiB measured, and page tables that grow).
	gvisorMemoryOverhead = 128 << 20
	// gvisorDefaultTasks is the pids limit of a gVisor pod whose spec and
	// Options.Defaults give none. Docker's default is 1024, but the node's
	// podPidsLimit must hold 4x that plus the sentry's threads (systrap's
	// stubs follow the processes): 768 keeps within 4096, the test
	// node's and a common setting.
	gvisorDefaultTasks = 768
)

// isGVisorClass tells gVisor's RuntimeClass by its conventional names.
func isGVisorClass(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "gvisor") || strings.Contains(n, "runsc")
}

// gvisorLimits moves a pod's limits inside gVisor, as runtime/docker does:
// under gVisor the node's cgroup holds the sentry, not the agent's
// processes, so a fork bomb at the node's pids limit left the sentry
// unable to start a thread and a memory bomb made the node's OOM killer
// end the sentry, so the pod. Kubernetes has no ulimit and no per-pod pids
// limit, so toolboxd sets RLIMIT_NPROC on itself from EnvTasksLimit before
// it starts anything (gVisor's kernel counts it per sandbox, threads
// included; under runc it would count uid 1000 across the node, which is
// why runc pods get none), and enforces the memory limit itself
// (EnvMemoryLimit; gVisor's memory cgroup reports use but enforces
// nothing). The container's memory limit gets the same headroom as
// Docker's, the sentry's overhead and a quarter of the limit (at least
// 128 MiB) for what an allocation gains while toolboxd's guard polls, so
// that the guard acts before the node's OOM killer.
func gvisorLimits(res drydock.Resources) (memory int64, env map[string]string) {
	return res.MemoryBytes + gvisorMemoryOverhead + max(res.MemoryBytes/4, 128<<20), map[string]string{
		EnvMemoryLimit: strconv.FormatInt(res.MemoryBytes, 10),
		EnvTasksLimit:  strconv.FormatInt(res.PidsLimit, 10),
	}
}
