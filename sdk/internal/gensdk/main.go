// Command gensdk regenerates the SDKs' types from api/openapi.json: the
// Python TypedDicts (sdk/python/drydock/_schema.py) and, when npm is
// installed, the TypeScript types (sdk/typescript/src/schema.ts, by the
// openapi-typescript release pinned in sdk/typescript/package-lock.json).
// Run it with `make sdk` or `go generate ./sdk` after changing the API.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/drydockhq/drydock/sdk/internal/pytypes"
)

func main() {
	dir := flag.String("sdk", ".", "the sdk directory")
	noTS := flag.Bool("python-only", false, "skip the TypeScript types (no npm needed)")
	flag.Parse()
	if err := run(*dir, !*noTS); err != nil {
		fmt.Fprintln(os.Stderr, "gensdk:", err)
		os.Exit(1)
	}
}

func run(dir string, ts bool) error {
	doc, err := os.ReadFile(filepath.Join(dir, "..", "api", "openapi.json"))
	if err != nil {
		return err
	}
	py, err := pytypes.Generate(doc)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "python", "drydock", "_schema.py")
	if err := os.WriteFile(out, py, 0o644); err != nil {
		return err
	}
	slog.Info("wrote", "file", out)
	if !ts {
		return nil
	}
	tsDir := filepath.Join(dir, "typescript")
	if _, err := os.Stat(filepath.Join(tsDir, "node_modules", ".bin", "openapi-typescript")); err != nil {
		if err := npm(tsDir, "ci", "--no-audit", "--no-fund"); err != nil {
			return fmt.Errorf("install openapi-typescript (npm ci in %s): %w", tsDir, err)
		}
	}
	if err := npm(tsDir, "run", "--silent", "generate"); err != nil {
		return fmt.Errorf("generate the TypeScript types: %w", err)
	}
	slog.Info("wrote", "file", filepath.Join(tsDir, "src", "schema.ts"))
	return nil
}

func npm(dir string, args ...string) error {
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
