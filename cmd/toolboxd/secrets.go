package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/drydockhq/drydock/toolbox"
)

// envSecretsFile names a JSON file {"token", "vnc_password"} that toolboxd
// reads once at start and removes. The runtimes pass secrets this way, not
// in the container's environment: every process in a sandbox runs as the
// same uid and can read PID 1's /proc/1/environ, and `docker inspect` shows
// the environment to anyone with the engine's socket.
const envSecretsFile = "TOOLBOXD_SECRETS_FILE"

// takeSecrets reads the secrets file and removes it, so that nothing
// started later in the sandbox finds it.
func takeSecrets(path string) (toolbox.BootSecrets, error) {
	var s toolbox.BootSecrets
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read secrets file: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return s, fmt.Errorf("remove secrets file (it must not outlive the start): %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("secrets file %s: %w", path, err)
	}
	s.Token = strings.TrimSpace(s.Token)
	return s, nil
}

// undumpable keeps the sandbox's other processes, which share toolboxd's uid,
// from reading its memory and environment through /proc or ptrace: a
// non-dumpable process's /proc files belong to root. Children are dumpable
// again after their exec.
func undumpable() error {
	const prSetDumpable = 4
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	return nil
}
