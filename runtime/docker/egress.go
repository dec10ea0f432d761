package docker

import (
	"maps"
	"path/filepath"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Egress. A sandbox has no network interface; its processes reach the
// network through the orchestrator's egress proxy (package egress), which
// listens on a unix socket in the sandbox's socket directory, and which
// toolboxd offers them on the sandbox's own loopback.
const egressSocket = "egress.sock"

// egressEnv points toolboxd's forwarder at the proxy's socket and the
// usual proxy variables at the forwarder. It overrides what the spec sets:
// there is no other way out.
func egressEnv(env map[string]string) {
	maps.Copy(env, toolbox.EgressEnv())
	env[toolbox.EnvEgressListen] = toolbox.EgressListen
	env[toolbox.EnvEgressSocket] = toolboxDir + "/" + egressSocket
}

// EgressSocket is the host path where the sandbox's egress proxy must
// listen for the sandbox to reach it.
func (r *Runtime) EgressSocket(sb *drydock.Sandbox) (string, error) {
	if !idPattern.MatchString(sb.ID) {
		return "", drydock.Errorf(drydock.ENOTFOUND, "sandbox %q not found", sb.ID)
	}
	return filepath.Join(r.sandboxDir(sb.ID, sb.Labels), "toolbox", egressSocket), nil
}
