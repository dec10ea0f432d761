package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// PodmanSeccompProfile is where Podman keeps its default seccomp profile.
const PodmanSeccompProfile = "/usr/share/containers/seccomp.json"

// Podman's default seccomp profile allows, to any process, system calls that
// Docker's allows only with CAP_SYS_ADMIN: the kernel keyring (keyctl) and
// new namespaces (unshare, setns, clone with namespace flags; clone3, whose
// flags seccomp cannot see). A sandbox has no use for them and they are
// kernel attack surface, so with Podman the runtime derives a profile from
// the engine's own that refuses them, the way Docker's does.
var (
	podmanDenied = []string{"keyctl", "add_key", "request_key", "unshare", "setns", "clone", "clone3"}
	// cloneNamespaceFlags masks CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
	// NEWUSER, NEWPID and NEWNET: clone is allowed only without them.
	cloneNamespaceFlags uint64 = 0x7E020000
)

const errnoENOSYS = 38

type seccompProfile struct {
	once sync.Once
	data []byte
	err  error
}

// podmanSeccomp writes the derived profile into the sandbox's state
// directory (so it goes with the sandbox) and returns its path. Podman's
// Docker-compatible API takes a profile as a path on the engine's host
// (Docker takes the JSON itself), which works because the runtime talks to a
// local socket. The engine's profile is read and hardened once.
func (r *Runtime) podmanSeccomp(dir string) (string, error) {
	r.seccomp.once.Do(func() {
		src := r.opts.PodmanSeccompProfile
		if src == "" {
			src = PodmanSeccompProfile
		}
		data, err := os.ReadFile(src)
		if err != nil {
			r.seccomp.err = fmt.Errorf("read Podman's seccomp profile (set Options.PodmanSeccompProfile to its path): %w", err)
			return
		}
		if r.seccomp.data, err = hardenPodmanProfile(data); err != nil {
			r.seccomp.err = fmt.Errorf("seccomp profile %s: %w", src, err)
		}
	})
	if r.seccomp.err != nil {
		return "", r.seccomp.err
	}
	path := filepath.Join(dir, "seccomp.json")
	if err := os.WriteFile(path, r.seccomp.data, 0o644); err != nil {
		return "", fmt.Errorf("write seccomp profile: %w", err)
	}
	return path, nil
}

// hardenPodmanProfile removes the denied calls from every unconditional
// allow rule and adds Docker's rules for clone (no namespace flags) and
// clone3 (ENOSYS, so that libc falls back to clone).
func hardenPodmanProfile(data []byte) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	rules, ok := p["syscalls"].([]any)
	if !ok {
		return nil, fmt.Errorf("no syscalls list")
	}
	for _, x := range rules {
		rule, ok := x.(map[string]any)
		if !ok || rule["action"] != "SCMP_ACT_ALLOW" || hasConditions(rule) {
			continue
		}
		names, _ := rule["names"].([]any)
		rule["names"] = slices.DeleteFunc(names, func(n any) bool {
			s, _ := n.(string)
			return slices.Contains(podmanDenied, s)
		})
	}
	rules = append(rules,
		map[string]any{"names": []string{"clone"}, "action": "SCMP_ACT_ALLOW",
			"args": []map[string]any{{"index": 0, "value": cloneNamespaceFlags, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}}},
		map[string]any{"names": []string{"clone3"}, "action": "SCMP_ACT_ERRNO", "errnoRet": errnoENOSYS},
	)
	p["syscalls"] = rules
	return json.Marshal(p)
}

// hasConditions reports whether a rule applies only with some arguments,
// capabilities or architectures; those are the engine's business.
func hasConditions(rule map[string]any) bool {
	if args, _ := rule["args"].([]any); len(args) > 0 {
		return true
	}
	for _, k := range []string{"includes", "excludes"} {
		if m, _ := rule[k].(map[string]any); len(m) > 0 {
			return true
		}
	}
	return false
}
