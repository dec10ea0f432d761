package api_test

import (
	"archive/tar"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// What api/openapi.json tells SDKs about GET /v1/jobs/{id}/files/{path}: a
// file's bytes always carry Content-Disposition (inline, or attachment with
// download=1), a directory listing never does, and Content-Type alone
// cannot tell them apart, since a workspace file named *.json is served as
// application/json too. Live from the sandbox as from the archive.
func TestFilesTellAListingFromAFileByContentDisposition(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	ws := t.TempDir()
	sb := startToolbox(t, "sb-kind", ws, nil)
	live := b.runningJob(t, b.alice, `{"agent": "none"}`, sb)
	if resp, data := b.send(t, "PUT", "/v1/jobs/"+live.ID+"/files/dir/listing.json", b.alice, `{"text": "{\"path\": \"\", \"entries\": []}"}`); resp.StatusCode != 200 {
		t.Fatalf("write: %d %s", resp.StatusCode, data)
	}
	archived := b.runningJob(t, b.alice, `{"task": "x"}`, nil)
	b.finish(t, archived.ID, drydock.StatusComplete, tarGz(t, []tarEntry{
		{name: "dir/", typ: tar.TypeDir},
		{name: "dir/listing.json", typ: tar.TypeReg, body: `{"path": "", "entries": []}`},
	}))
	for _, j := range []*drydock.Job{live, archived} {
		files := "/v1/jobs/" + j.ID + "/files/"
		for _, c := range []struct {
			path     string
			file     bool
			disposed string
		}{
			{"", false, ""},
			{"dir", false, ""},
			{"dir/listing.json", true, "inline"},
			{"dir/listing.json?download=1", true, "attachment"},
		} {
			resp, data := b.get(t, files+c.path, b.alice)
			cd, ct := resp.Header.Get("Content-Disposition"), resp.Header.Get("Content-Type")
			switch {
			case resp.StatusCode != 200:
				t.Errorf("job %s, %q: %d %s", j.ID, c.path, resp.StatusCode, data)
			case c.file && !strings.HasPrefix(cd, c.disposed+";"):
				t.Errorf("job %s, file %q: Content-Disposition %q; want %s", j.ID, c.path, cd, c.disposed)
			case !c.file && (cd != "" || !strings.HasPrefix(ct, "application/json")):
				t.Errorf("job %s, listing %q: Content-Disposition %q, Content-Type %q; want none and application/json", j.ID, c.path, cd, ct)
			}
			if c.path == "dir/listing.json" && !strings.HasPrefix(ct, "application/json") {
				t.Errorf("a .json file is served as %q: the document says Content-Type cannot tell it from a listing; fix one or the other", ct)
			}
		}
	}
}
