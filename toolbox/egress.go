package toolbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// Egress. A sandbox's processes reach the network only through toolboxd's
// forwarder on the sandbox's own loopback (EgressListen), which every
// runtime names in the usual proxy variables (EgressEnv). The forwarder
// passes each connection to the orchestrator's egress proxy (package
// egress): through a unix socket mounted into the sandbox (Docker, Podman),
// or over the network to the orchestrator's egress gateway (Kubernetes).
// Over the network it first sends a hello line that names the sandbox and
// proves it holds the sandbox's token, so that the gateway applies that
// sandbox's job's allowlist and no pod can pose as another.

// EgressListen is where toolboxd's forwarder listens inside a sandbox.
const EgressListen = "127.0.0.1:3128"

// The environment that configures toolboxd's forwarder.
const (
	// EnvEgressListen turns the forwarder on, listening there.
	EnvEgressListen = "TOOLBOXD_EGRESS_LISTEN"
	// EnvEgressSocket is the proxy's unix socket (Docker, Podman).
	EnvEgressSocket = "TOOLBOXD_EGRESS_SOCKET"
	// EnvEgressGateway is the gateway's host:port (Kubernetes).
	EnvEgressGateway = "TOOLBOXD_EGRESS_GATEWAY"
	// EnvSandboxID names the sandbox in the hello line.
	EnvSandboxID = "TOOLBOXD_SANDBOX_ID"
)

// EgressEnv is the environment that sends a sandbox's programs through the
// forwarder: curl, pip, npm, git and most HTTP libraries read these.
func EgressEnv() map[string]string {
	proxy := "http://" + EgressListen
	env := map[string]string{}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env[k] = proxy
	}
	env["NO_PROXY"] = "localhost,127.0.0.1,::1"
	env["no_proxy"] = env["NO_PROXY"]
	return env
}

// egressHelloPrefix starts the hello line; the version lets the gateway
// refuse a forwarder it does not understand with a clear answer.
const egressHelloPrefix = "DRYDOCK-EGRESS/1 "

// MaxEgressHello bounds the hello line, newline included.
const MaxEgressHello = 256

// TokenHash is what toolboxd keeps of its token (never the token itself),
// and so what an egress proof is made from.
func TokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// egressProof binds a sandbox id to its token. It is derived, so the token
// itself never travels to the gateway, and it names the sandbox, so one
// sandbox's proof is worthless for another.
func egressProof(tokenHash [32]byte, sandboxID string) []byte {
	m := hmac.New(sha256.New, tokenHash[:])
	m.Write([]byte("drydock-egress\x00" + sandboxID))
	return m.Sum(nil)
}

// EgressHello is the line a forwarder sends first on each connection to
// the gateway.
func EgressHello(tokenHash [32]byte, sandboxID string) string {
	return egressHelloPrefix + sandboxID + " " + hex.EncodeToString(egressProof(tokenHash, sandboxID)) + "\n"
}

// ParseEgressHello reads a hello line (with or without its newline) and
// returns the sandbox it names and a check of its proof against a token.
func ParseEgressHello(line string) (sandboxID string, verify func(token string) bool, err error) {
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	rest, ok := strings.CutPrefix(line, egressHelloPrefix)
	if !ok {
		return "", nil, fmt.Errorf("not a drydock egress hello (a forwarder of another version, or not a forwarder)")
	}
	id, proofHex, ok := strings.Cut(rest, " ")
	if !ok || id == "" || strings.ContainsAny(id, " \t") {
		return "", nil, fmt.Errorf("malformed egress hello")
	}
	proof, err := hex.DecodeString(proofHex)
	if err != nil || len(proof) != sha256.Size {
		return "", nil, fmt.Errorf("malformed egress hello proof")
	}
	return id, func(token string) bool {
		return subtle.ConstantTimeCompare(proof, egressProof(TokenHash(token), id)) == 1
	}, nil
}
