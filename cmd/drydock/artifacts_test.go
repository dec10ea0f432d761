package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/artifact/s3"
)

func TestOpenArtifacts(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	other := t.TempDir()
	backend := s3mem.New()
	if err := backend.CreateBucket("drydock"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	getenv := func(k string) string {
		return map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"}[k]
	}

	for _, tc := range []struct {
		spec, desc string
		local      string // the directory of a local store; empty for S3
	}{
		{"", filepath.Join(dataDir, "artifacts"), filepath.Join(dataDir, "artifacts")},
		{other, other, other},
		{"file://" + other, other, other},
		{"s3://drydock/jobs?endpoint=" + srv.URL + "&path_style=true&region=us-east-1", "s3://drydock/jobs at " + srv.URL, ""},
	} {
		st, desc, err := openArtifacts(t.Context(), tc.spec, dataDir, getenv)
		if err != nil {
			t.Errorf("openArtifacts(%q): %v", tc.spec, err)
			continue
		}
		if desc != tc.desc {
			t.Errorf("openArtifacts(%q) describes itself as %q, want %q", tc.spec, desc, tc.desc)
		}
		switch s := st.(type) {
		case *local.Store:
			if s.Dir != tc.local {
				t.Errorf("openArtifacts(%q) = directory %s, want %s", tc.spec, s.Dir, tc.local)
			}
		case *s3.Store:
			if tc.local != "" {
				t.Errorf("openArtifacts(%q) = S3, want directory %s", tc.spec, tc.local)
			}
		default:
			t.Errorf("openArtifacts(%q) = %T", tc.spec, st)
		}
	}
	for _, bad := range []string{
		"http://example.com/x", "file://host/x", "s3://drydock?endpoint=" + srv.URL + "&path_style=true&region=us-east-1&bogus=1",
		"s3://missing-bucket?endpoint=" + srv.URL + "&path_style=true&region=us-east-1",
	} {
		if _, _, err := openArtifacts(t.Context(), bad, dataDir, getenv); err == nil {
			t.Errorf("openArtifacts(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("openArtifacts(%q) error shows the secret: %v", bad, err)
		}
	}
}
