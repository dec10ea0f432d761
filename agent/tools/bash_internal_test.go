package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// What the model reads when memory ran out. It used to read
// "[exit code -1] [The shell exited]" and nothing else.
func TestFormatRunOutOfMemory(t *testing.T) {
	t.Parallel()
	oom := &toolbox.OutOfMemory{Kills: 1, Message: "out of memory: the kernel's OOM killer ended a process in the sandbox. Files hold 1900 MiB of it. Free space with rm, then retry."}
	tests := []struct {
		name string
		res  toolbox.RunResult
		want []string
		not  []string
	}{
		{"the shell killed", toolbox.RunResult{ExitCode: -1, ShellExited: true, ShellEnd: "ended by signal 9 (killed)", OutOfMemory: oom},
			[]string{"[Out of memory: the kernel's OOM killer", "Free space with rm", "[The shell exited (ended by signal 9 (killed); memory ran out, see below)", "without the old working directory, variables or background jobs"},
			[]string{"exit code -1"}},
		{"the command killed", toolbox.RunResult{Output: "bash: line 1: 42 Killed python3 big.py\n", ExitCode: 137, OutOfMemory: oom},
			[]string{"Killed python3 big.py", "[exit code 137]", "[Out of memory:"}, []string{"shell exited"}},
		{"a fresh shell", toolbox.RunResult{Output: "/workspace\n", FreshShell: true, ShellEnd: "ended by signal 9 (killed)", OutOfMemory: oom},
			[]string{"[The shell had ended since the last command (ended by signal 9 (killed); memory ran out, see below); this command ran in a fresh shell", "/workspace", "[Out of memory:"}, nil},
		{"exit", toolbox.RunResult{ExitCode: 7, ShellExited: true, ShellEnd: "exited with status 7"},
			[]string{"[exit code 7]", "[The shell exited; the next command"}, []string{"memory"}},
	}
	for _, tt := range tests {
		got := formatRun(&tt.res, nil, time.Minute)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.name, got, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q has %q", tt.name, got, w)
			}
		}
	}
}
