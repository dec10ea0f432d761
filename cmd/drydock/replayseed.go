package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// seed checks --seed and returns what opens it as a tar stream, or nil
// without one. Checked before anything is created, so that a wrong path
// costs no sandbox.
func (c *ReplayCmd) seed() (func() (io.ReadCloser, error), error) {
	if c.Seed == "" {
		return nil, nil
	}
	fi, err := os.Stat(c.Seed)
	if err != nil {
		return nil, fmt.Errorf("--seed: %w", err)
	}
	if fi.IsDir() {
		return client.WorkspaceDir(c.Seed, client.PackOptions{IncludeGit: true}), nil
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--seed %s is neither a directory nor a file", safe(c.Seed))
	}
	f, err := os.Open(c.Seed)
	if err != nil {
		return nil, fmt.Errorf("--seed: %w", err)
	}
	head, _ := bufio.NewReader(f).Peek(4)
	f.Close()
	if bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06")) {
		return nil, fmt.Errorf("--seed %s is a zip archive: give a tar or tar.gz (drydock download JOB saves a tar.gz), or a directory", safe(c.Seed))
	}
	return func() (io.ReadCloser, error) { return os.Open(c.Seed) }, nil
}

// startedFrom says what a recorded job's workspace held before its agent
// ran, or "" for an empty workspace.
func startedFrom(tr *drydock.Trajectory) string {
	j := tr.Job
	switch {
	case j == nil:
		return ""
	case j.Repo != nil:
		at := j.Repo.Ref
		for _, e := range tr.Events {
			var d struct{ Kind, Commit string }
			if e.Type == drydock.EventLog && json.Unmarshal(e.Data, &d) == nil && d.Kind == "repo_cloned" && d.Commit != "" {
				at = "commit " + d.Commit
				break
			}
		}
		if at == "" {
			return "a clone of " + j.Repo.URL
		}
		return "a clone of " + j.Repo.URL + " at " + at
	case j.ParentJobID != "":
		return "the final workspace of job " + j.ParentJobID + " (drydock download " + j.ParentJobID + ")"
	case j.InputSize > 0:
		return "an uploaded workspace"
	}
	return ""
}
