package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/drydockhq/drydock"
)

// Under gVisor the node's cgroup of a pod holds gVisor's sentry, not the
// agent's processes, so the limits move inside: toolboxd gets the tasks
// limit (its RLIMIT_NPROC) and the memory limit to enforce, and the
// container's memory limit gets Docker's headroom so that toolboxd acts
// before the node's OOM killer. A pod under runc, or another class, is
// limited by the node as before and gets no RLIMIT_NPROC, which the host
// kernel would count across every sandbox's uid 1000.
func TestGVisorPodLimits(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, c := range []struct {
		name       string
		opts       Options
		res        drydock.Resources
		memory     int64  // the container's limit
		toolboxd   string // TOOLBOXD_MEMORY_LIMIT
		tasks      string // TOOLBOXD_TASKS_LIMIT
		jobTaskEnv bool
	}{
		{name: "runc", res: drydock.Resources{MemoryBytes: 512 * mib, PidsLimit: 256}, memory: 512 * mib},
		{name: "kata", opts: Options{RuntimeClassName: "kata-fc"}, res: drydock.Resources{MemoryBytes: 512 * mib, PidsLimit: 256}, memory: 512 * mib},
		// 512 MiB + 128 MiB for the sentry + max(128 MiB, a quarter).
		{name: "gvisor", opts: Options{RuntimeClassName: "gvisor"}, res: drydock.Resources{MemoryBytes: 512 * mib, PidsLimit: 256},
			memory: 768 * mib, toolboxd: "536870912", tasks: "256"},
		{name: "gvisor large", opts: Options{RuntimeClassName: "gvisor"}, res: drydock.Resources{MemoryBytes: 4096 * mib, PidsLimit: 1024},
			memory: (4096 + 128 + 1024) * mib, toolboxd: "4294967296", tasks: "1024"},
		{name: "gvisor default tasks", opts: Options{RuntimeClassName: "my-runsc"}, res: drydock.Resources{MemoryBytes: 512 * mib},
			memory: 768 * mib, toolboxd: "536870912", tasks: "768"},
		{name: "a class named otherwise, said to be gVisor", opts: Options{RuntimeClassName: "sandboxed", GVisor: true}, res: drydock.Resources{MemoryBytes: 512 * mib, PidsLimit: 100},
			memory: 768 * mib, toolboxd: "536870912", tasks: "100"},
		{name: "the job cannot choose its own limit", opts: Options{RuntimeClassName: "gvisor"}, res: drydock.Resources{MemoryBytes: 512 * mib, PidsLimit: 256},
			memory: 768 * mib, toolboxd: "536870912", tasks: "256", jobTaskEnv: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Client = fake.NewClientset()
			rt, err := New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			spec := drydock.SandboxSpec{JobID: "job-1", Profile: drydock.ProfileHeadless, Resources: c.res}
			if c.jobTaskEnv {
				spec.Env = map[string]string{EnvTasksLimit: "100000", EnvMemoryLimit: "1"}
			}
			res := rt.resources(spec.Resources)
			if err := validResources(res); err != nil {
				t.Fatal(err)
			}
			pod := rt.pod("drydock-0123456789abcdef", "img", spec, res, rt.domainLabels(spec), "")
			for _, ctr := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				for what, l := range map[string]corev1.ResourceList{"limit": ctr.Resources.Limits, "request": ctr.Resources.Requests} {
					if got := l.Memory().Value(); got != c.memory {
						t.Errorf("%s container's memory %s is %d MiB; want %d MiB", ctr.Name, what, got/mib, c.memory/mib)
					}
				}
			}
			env := map[string][]string{}
			for _, e := range pod.Spec.Containers[0].Env {
				env[e.Name] = append(env[e.Name], e.Value)
			}
			for k, want := range map[string]string{EnvMemoryLimit: c.toolboxd, EnvTasksLimit: c.tasks} {
				got := strings.Join(env[k], ",")
				if got != want {
					t.Errorf("$%s = %q; want %q", k, got, want)
				}
			}
		})
	}
}

// gVisor's limits need the class that runs gVisor, and a pids limit
// toolboxd accepts.
func TestGVisorOptionsRefused(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{Client: fake.NewClientset(), GVisor: true}); err == nil || !strings.Contains(err.Error(), "RuntimeClass") {
		t.Errorf("GVisor without a RuntimeClass: %v; want an error naming the RuntimeClass", err)
	}
	rt, err := New(Options{Client: fake.NewClientset(), RuntimeClassName: "gvisor"})
	if err != nil {
		t.Fatal(err)
	}
	err = validResources(rt.resources(drydock.Resources{PidsLimit: 8}))
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(err.Error(), "pids limit 8") {
		t.Errorf("a pids limit of 8 under gVisor: %v; want EINVALID naming it", err)
	}
}
