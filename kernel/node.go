package kernel

import (
	"bytes"
	"context"
	"errors"
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
	esm := esmSyntax.MatchString(code)
	if lang == TypeScript {
		// TypeScript's imports compile to require calls, so only code with
		// top-level await needs module output.
		esm = hasTopLevelAwait(code)
		js, errs, err := k.transpile(ctx, code, esm)
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return k.nodeFailure(ctx, res, start, timeout, timeoutError{})
			}
			return nil, err
		}
		if len(errs) > 0 {
			res.Stderr = strings.Join(errs, "\n") + "\n"
			res.ExitCode = 2
			res.Error = &ExecError{Name: "TypeScriptError", Value: errs[0]}
			res.Duration = time.Since(start)
			return res, nil
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
	out, run, err := k.runNode(ctx, code, args...)
	if err != nil {
		return k.nodeFailure(ctx, res, start, timeout, err)
	}
	res.Stdout, res.Stderr, res.ExitCode = out, run.stderr, run.code
	res.Truncated = run.truncated
	if run.code != 0 {
		res.Error = nodeError(run.stderr, run.code)
	}
	res.Duration = time.Since(start)
	return res, nil
}

func (k *Kernel) nodeFailure(ctx context.Context, res *Result, start time.Time, timeout time.Duration, err error) (*Result, error) {
	var te timeoutError
	if !errors.As(err, &te) {
		return nil, err
	}
	res.Stdout, res.Stderr, res.ExitCode = te.run.stdout, te.run.stderr, -1
	res.TimedOut, res.Truncated = true, te.run.truncated
	res.Error = &ExecError{Name: "TimeoutError", Value: fmt.Sprintf("execution timed out after %v and was killed", timeout)}
	res.Duration = time.Since(start)
	return res, nil
}

type nodeRun struct {
	stdout, stderr string
	code           int
	truncated      bool
}

type timeoutError struct{ run nodeRun }

func (timeoutError) Error() string { return "timed out" }

// runNode runs node with code on stdin and returns its stdout; a non-zero
// exit is reported in nodeRun, not as an error.
func (k *Kernel) runNode(ctx context.Context, stdin string, args ...string) (string, nodeRun, error) {
	cmd := exec.Command(k.cfg.Node, args...)
	cmd.Dir = k.cfg.Dir
	cmd.Env = k.env()
	cmd.Stdin = strings.NewReader(stdin)
	stdout := &cappedBuffer{limit: k.cfg.OutputLimit}
	stderr := &cappedBuffer{limit: k.cfg.OutputLimit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	p, err := startProc(cmd)
	if err != nil {
		return "", nodeRun{}, fmt.Errorf("start node: %w", err)
	}
	var timedOut bool
	select {
	case <-p.exited:
	case <-ctx.Done():
		// The whole group: code may have spawned children.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		timedOut = true
	}
	run := nodeRun{
		stdout:    stdout.String(),
		stderr:    stderr.String(),
		code:      cmd.ProcessState.ExitCode(),
		truncated: stdout.truncated || stderr.truncated,
	}
	if timedOut {
		if ctx.Err() == context.DeadlineExceeded {
			return "", run, timeoutError{run}
		}
		return "", run, ctx.Err()
	}
	return run.stdout, run, nil
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

// cappedBuffer keeps the first limit bytes written to it.
type cappedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	limit     int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit - b.buf.Len()
	if len(p) > room {
		b.truncated = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
