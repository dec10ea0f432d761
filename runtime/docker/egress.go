package docker

import (
	"path/filepath"

	"github.com/drydockhq/drydock"
)

// Egress. A sandbox has no network interface; its processes reach the
// network through the orchestrator's egress proxy (package egress), which
// listens on a unix socket in the sandbox's socket directory, and which
// toolboxd offers them on the sandbox's own loopback.
const (
	egressSocket = "egress.sock"
	egressListen = "127.0.0.1:3128"
	// EnvEgressListen and EnvEgressSocket turn toolboxd's forwarder on.
	EnvEgressListen = "TOOLBOXD_EGRESS_LISTEN"
	EnvEgressSocket = "TOOLBOXD_EGRESS_SOCKET"
)

// egressEnv points toolboxd's forwarder at the proxy's socket and the
// usual proxy variables at the forwarder, so that curl, pip, npm, git and
// most HTTP libraries use it. It overrides what the spec sets: there is no
// other way out.
func egressEnv(env map[string]string) {
	env[EnvEgressListen] = egressListen
	env[EnvEgressSocket] = toolboxDir + "/" + egressSocket
	proxy := "http://" + egressListen
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env[k] = proxy
	}
	env["NO_PROXY"] = "localhost,127.0.0.1,::1"
	env["no_proxy"] = env["NO_PROXY"]
}

// EgressSocket is the host path where the sandbox's egress proxy must
// listen for the sandbox to reach it.
func (r *Runtime) EgressSocket(sb *drydock.Sandbox) (string, error) {
	if !idPattern.MatchString(sb.ID) {
		return "", drydock.Errorf(drydock.ENOTFOUND, "sandbox %q not found", sb.ID)
	}
	return filepath.Join(r.sandboxDir(sb.ID, sb.Labels), "toolbox", egressSocket), nil
}
