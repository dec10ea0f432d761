package kernel

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
)

// Execute runs code in language ("python", "javascript" or "typescript")
// with a timeout (0 means the configured default). Python runs in the
// persistent kernel, so its variables and imports carry over to the next
// call; JavaScript and TypeScript run in a fresh node process each time.
//
// Errors raised by the code are part of the Result; the error return is for
// failures of the machinery (no kernel, no node, caller gone).
func (k *Kernel) Execute(ctx context.Context, lang, code string, timeout time.Duration) (*Result, error) {
	if timeout <= 0 {
		timeout = k.cfg.DefaultTimeout
	}
	switch strings.ToLower(lang) {
	case Python, "py", "python3":
		return k.executePython(ctx, code, timeout)
	case JavaScript, "js", "node":
		return k.executeNode(ctx, JavaScript, code, timeout)
	case TypeScript, "ts":
		return k.executeNode(ctx, TypeScript, code, timeout)
	}
	return nil, drydock.Errorf(drydock.EINVALID, "language %q is not one of python, javascript, typescript", lang)
}

// ESM syntax (static import/export, import.meta, or await at the top
// level) needs node's module mode; everything else runs as CommonJS, like
// `node file.js`, where require works.
var (
	esmSyntax      = regexp.MustCompile(`(?m)^\s*(import\s*[\w{*'"]|export\s|import\.meta)|^(await\s|for\s+await\b|(const|let|var)\s[^=\n]*=\s*await\s)|\bimport\.meta\b`)
	usesRequire    = regexp.MustCompile(`\brequire\s*\(`)
	definesRequire = regexp.MustCompile(`\b(const|let|var|function)\s+require\b`)
)

// requireShim gives module code a require resolving from the working
// directory, as CommonJS code has. It is prepended without a newline so
// that line numbers in stack traces stay those of the code.
const requireShim = `import { createRequire as __drydockCreateRequire } from "node:module"; const require = __drydockCreateRequire(process.cwd() + "/"); `

func (k *Kernel) executeNode(ctx context.Context, lang, code string, timeout time.Duration) (*Result, error) {
	if _, err := exec.LookPath(k.cfg.Node); err != nil {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "node is not installed")
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &Result{Language: lang}
	col := &collector{res: res, limit: k.cfg.OutputLimit}
	finish := func() (*Result, error) {
		res.Duration = time.Since(start)
		return res, nil
	}
	timedOut := func() (*Result, error) {
		res.TimedOut, res.ExitCode = true, -1
		res.Error = &ExecError{Name: "TimeoutError", Value: fmt.Sprintf("execution timed out after %v and was killed", timeout)}
		return finish()
	}

	esm := esmSyntax.MatchString(code)
	if lang == TypeScript {
		// TypeScript's imports compile to require calls, so only code with
		// top-level await needs module output.
		esm = hasTopLevelAwait(code)
		js, errs, err := k.transpile(ctx, code, esm)
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return timedOut()
			}
			return nil, err
		}
		if len(errs) > 0 {
			col.stream("stderr", strings.Join(errs, "\n")+"\n")
			res.ExitCode = 2
			res.Error = &ExecError{Name: "TypeScriptError", Value: errs[0]}
			return finish()
		}
		code = js
	}
	args := []string{"--input-type=commonjs"}
	if esm {
		args = []string{"--input-type=module"}
		if usesRequire.MatchString(code) && !definesRequire.MatchString(code) {
			code = requireShim + code
		}
	}

	cmd := exec.Command(k.cfg.Node, args...)
	cmd.Dir = k.cfg.Dir
	cmd.Env = k.env()
	cmd.Stdin = strings.NewReader(code)
	// One lock for both streams keeps their pieces in arrival order.
	var mu sync.Mutex
	cmd.Stdout = &streamWriter{mu: &mu, col: col, name: "stdout"}
	cmd.Stderr = &streamWriter{mu: &mu, col: col, name: "stderr"}
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		// The whole group: code may have spawned children.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		if ctx.Err() == context.DeadlineExceeded {
			return timedOut()
		}
		return nil, ctx.Err()
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// "exited with status -1" would hide a kill, the OOM killer's
		// above all.
		res.Error = &ExecError{Name: "Killed", Value: fmt.Sprintf("node was ended by signal %d (%s)", int(ws.Signal()), ws.Signal())}
		return finish()
	}
	if res.ExitCode != 0 {
		res.Error = nodeError(res.Stderr(), res.ExitCode)
	}
	return finish()
}

// streamWriter feeds one output stream of a process into a collector.
type streamWriter struct {
	mu   *sync.Mutex
	col  *collector
	name string
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.col.stream(w.name, string(p))
	return len(p), nil
}

// nodeError extracts "TypeError: x is not a function" from node's report of
// an uncaught exception.
var nodeErrorLine = regexp.MustCompile(`(?m)^(?:Uncaught )?([A-Z]\w*(?:Error|Exception)|Error)(?: \[\w+\])?: (.*)$`)

func nodeError(stderr string, code int) *ExecError {
	if m := nodeErrorLine.FindStringSubmatch(stderr); m != nil {
		return &ExecError{Name: m[1], Value: m[2]}
	}
	return &ExecError{Name: "ExitError", Value: fmt.Sprintf("node exited with status %d", code)}
}

var topLevelAwait = regexp.MustCompile(`(?m)^(await\s|for\s+await\b|(const|let|var)\s[^=\n]*=\s*await\s)`)

func hasTopLevelAwait(code string) bool { return topLevelAwait.MatchString(code) }

var tsOnce struct {
	sync.Once
	dir string
	err error
}

// typeScriptModule finds the typescript package: configured, or next to
// the tsc on PATH (/usr/bin/tsc links into /usr/share/nodejs/typescript on
// Debian; npm installs link into lib/node_modules/typescript).
func (k *Kernel) typeScriptModule() (string, error) {
	if k.cfg.TypeScriptModule != "" {
		return k.cfg.TypeScriptModule, nil
	}
	tsOnce.Do(func() {
		var candidates []string
		if tsc, err := exec.LookPath("tsc"); err == nil {
			if real, err := filepath.EvalSymlinks(tsc); err == nil {
				candidates = append(candidates, filepath.Dir(filepath.Dir(real)))
			}
		}
		candidates = append(candidates, "/usr/share/nodejs/typescript", "/usr/lib/node_modules/typescript",
			"/usr/local/lib/node_modules/typescript")
		for _, dir := range candidates {
			if _, err := os.Stat(filepath.Join(dir, "lib", "typescript.js")); err == nil {
				tsOnce.dir = dir
				return
			}
		}
		tsOnce.err = drydock.Errorf(drydock.EUNAVAILABLE, "typescript is not installed")
	})
	return tsOnce.dir, tsOnce.err
}
