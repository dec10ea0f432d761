package api_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
)

type uploadBundle struct {
	url     string
	store   *watch.Store
	arts    *local.Store
	artsDir string
}

func setupUpload(t testing.TB, lim api.UploadLimits) *uploadBundle {
	t.Helper()
	return setupUploadConfig(t, api.Config{Upload: lim})
}

func setupUploadConfig(t testing.TB, cfg api.Config) *uploadBundle {
	t.Helper()
	cfg.DevMode = true
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &uploadBundle{store: watch.Wrap(st), artsDir: filepath.Join(dir, "artifacts")}
	if b.arts, err = local.New(b.artsDir); err != nil {
		t.Fatal(err)
	}
	srv := api.New(cfg, b.store, &queue{}, b.arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	b.url = hs.URL
	return b
}

// part is one part of a multipart body.
type part struct{ name, filename, body string }

func multipartBody(t testing.TB, parts ...part) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.filename != "" {
			w, err = mw.CreateFormFile(p.name, p.filename)
		} else {
			w, err = mw.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, p.body)
	}
	mw.Close()
	return mw.FormDataContentType(), &buf
}

func (b *uploadBundle) post(t *testing.T, path string, hdr http.Header, parts ...part) (*http.Response, []byte) {
	t.Helper()
	ct, body := multipartBody(t, parts...)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+path, body)
	req.Header.Set("Content-Type", ct)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// nothingStored fails unless the store holds no job and the artifact
// store no blob.
func (b *uploadBundle) nothingStored(t *testing.T) {
	t.Helper()
	jobs, _, err := b.store.ListJobs(t.Context(), drydock.JobFilter{Limit: 10})
	if err != nil || len(jobs) != 0 {
		t.Errorf("jobs stored after a refused upload: %v %v", jobs, err)
	}
	ents, _ := os.ReadDir(b.artsDir)
	for _, e := range ents {
		t.Errorf("artifact left after a refused upload: %s", e.Name())
	}
}

// tarOf writes the entries; a regular entry's Size is set from body.
type upEntry struct {
	hdr  tar.Header
	body string
}

func file(name, body string) upEntry {
	return upEntry{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, body}
}
func dir(name string) upEntry {
	return upEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}
func symlink(name, target string) upEntry {
	return upEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}}
}
func hardlink(name, target string) upEntry {
	return upEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}}
}
func special(name string, typ byte) upEntry {
	return upEntry{hdr: tar.Header{Name: name, Typeflag: typ, Mode: 0o644}}
}

func tarOf(t testing.TB, entries ...upEntry) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	return buf.String()
}

func gz(s string) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, s)
	zw.Close()
	return buf.String()
}

type upZipEntry struct {
	name string
	mode os.FileMode
	body string
}

func zipOf(t testing.TB, entries ...upZipEntry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		fh := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		fh.SetMode(e.mode)
		w, err := zw.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, e.body)
	}
	zw.Close()
	return buf.String()
}

const spec = `{"task":"fix the failing test"}`

// TestUploadRefusals: every limit and every unsafe entry is a 4xx that
// names the problem, and nothing is stored: no job, no blob.
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	random := make([]byte, 4096)
	rand.Read(random)
	for _, tc := range []struct {
		name      string
		lim       api.UploadLimits
		parts     []part
		status    int
		errSubstr string
	}{
		{name: "absolute name", parts: ws(tarOf(t, file("/etc/passwd", "x"))), status: 400, errSubstr: "absolute"},
		{name: "dot-dot", parts: ws(gz(tarOf(t, file("../outside", "x")))), status: 400, errSubstr: `".."`},
		{name: "dot-dot inside", parts: ws(tarOf(t, file("a/../../outside", "x"))), status: 400, errSubstr: `".."`},
		{name: "NUL in a zip name", parts: ws(zipOf(t, upZipEntry{"a\x00b", 0o644, "x"})), status: 400, errSubstr: "NUL"},
		{name: "component too long", parts: ws(tarOf(t, file(strings.Repeat("n", 256), "x"))), status: 400, errSubstr: "name component of 256 bytes"},
		{name: "name too long", parts: ws(zipOf(t, upZipEntry{strings.Repeat("d/", 2100), 0o644, "x"})), status: 400, errSubstr: "the limit is 4096"},
		{name: "absolute link", parts: ws(tarOf(t, symlink("etc", "/etc"))), status: 400, errSubstr: "absolute path"},
		{name: "link out", parts: ws(tarOf(t, dir("d/"), symlink("d/up", "../.."))), status: 400, errSubstr: "leads out of the workspace"},
		{name: "link out through a link", parts: ws(tarOf(t, symlink("d/l2", "l1/.."), symlink("d/l1", ".."))), status: 400, errSubstr: `"l1/..", which leads out`},
		{name: "link loop", parts: ws(tarOf(t, symlink("a", "b"), symlink("b", "a"))), status: 400, errSubstr: "loop"},
		{name: "zip link out", parts: ws(zipOf(t, upZipEntry{"up", os.ModeSymlink | 0o777, "../../etc"})), status: 400, errSubstr: "leads out"},
		{name: "hard link to the host", parts: ws(tarOf(t, hardlink("passwd", "/etc/passwd"))), status: 400, errSubstr: "not a file earlier in the archive"},
		{name: "hard link forward", parts: ws(tarOf(t, hardlink("b", "a"), file("a", "x"))), status: 400, errSubstr: "not a file earlier"},
		{name: "device", parts: ws(tarOf(t, special("null", tar.TypeChar))), status: 400, errSubstr: "device"},
		{name: "block device", parts: ws(tarOf(t, special("sda", tar.TypeBlock))), status: 400, errSubstr: "device"},
		{name: "fifo", parts: ws(tarOf(t, special("pipe", tar.TypeFifo))), status: 400, errSubstr: "FIFO"},
		{name: "zip fifo", parts: ws(zipOf(t, upZipEntry{"pipe", os.ModeNamedPipe | 0o644, ""})), status: 400, errSubstr: "FIFO"},
		{name: "duplicate", parts: ws(tarOf(t, file("a.txt", "1"), file("./a.txt", "2"))), status: 400, errSubstr: "more than once"},
		{name: "duplicate dir", parts: ws(tarOf(t, dir("d/"), dir("d"))), status: 400, errSubstr: "more than once"},
		{name: "below a file", parts: ws(tarOf(t, file("a", "1"), file("a/b", "2"))), status: 400, errSubstr: `below "a", which is a file`},
		{name: "file over a directory", parts: ws(tarOf(t, file("a/b", "1"), file("a", "2"))), status: 400, errSubstr: "other entries are inside it"},
		{name: "below a link", parts: ws(tarOf(t, dir("sub/"), symlink("l", "sub"), file("l/x", "2"))), status: 400, errSubstr: "symbolic link"},
		{name: "zip with too many entries", lim: api.UploadLimits{Entries: 2}, parts: ws(zipOf(t, upZipEntry{"a", 0o644, ""}, upZipEntry{"b", 0o644, ""}, upZipEntry{"c", 0o644, ""})), status: 413, errSubstr: "more than 2 entries"},
		{name: "too many entries", lim: api.UploadLimits{Entries: 2}, parts: ws(tarOf(t, file("a", ""), file("b", ""), file("c", ""))), status: 413, errSubstr: "more than 2 entries"},
		{name: "entry too large", lim: api.UploadLimits{EntryBytes: 10}, parts: ws(tarOf(t, file("big", strings.Repeat("x", 11)))), status: 413, errSubstr: "limit for one file is 10"},
		{name: "zip entry too large", lim: api.UploadLimits{EntryBytes: 10}, parts: ws(zipOf(t, upZipEntry{"big", 0o644, strings.Repeat("x", 11)})), status: 413, errSubstr: "limit for one file is 10"},
		{name: "expands too far", lim: api.UploadLimits{Expanded: 15}, parts: ws(gz(tarOf(t, file("a", strings.Repeat("x", 10)), file("b", strings.Repeat("x", 10))))), status: 413, errSubstr: "expands to more than 15 bytes"},
		{name: "archive too large", lim: api.UploadLimits{Bytes: 1024}, parts: ws(string(random)), status: 413, errSubstr: "--max-upload-mib"},
		{name: "not an archive", parts: ws("project.tar.gz"), status: 415, errSubstr: "not a tar, tar.gz or zip"},
		{name: "xz", parts: ws("\xfd7zXZ\x00rest"), status: 415, errSubstr: "xz-compressed"},
		{name: "empty archive part", parts: ws(""), status: 400, errSubstr: "archive is empty"},
		{name: "truncated tar.gz", parts: ws(gz(tarOf(t, file("a", strings.Repeat("x", 2000))))[:60]), status: 400, errSubstr: "shorter than its header"},
		{name: "truncated tar", parts: ws(tarOf(t, file("a", strings.Repeat("x", 2000)))[:1000]), status: 400, errSubstr: "shorter than its header"},
		{name: "gzip of no tar", parts: ws(gz("just text, no tar header here")), status: 400, errSubstr: "damaged tar.gz"},
		{name: "bad spec before a large archive", lim: api.UploadLimits{Bytes: 1024}, parts: []part{{"spec", "", `{"task":""}`}, {"workspace", "p", string(random)}}, status: 400, errSubstr: "task is required"},
		{name: "workspace as text, not a file", parts: []part{{"spec", "", spec}, {"workspace", "", tarOf(t, file("a", "x"))}}, status: 400, errSubstr: `"workspace" must be a file`},
		{name: "spec missing", parts: []part{{"workspace", "p.tar", tarOf(t, file("a", "x"))}}, status: 400, errSubstr: `"spec" is missing`},
		{name: "workspace missing", parts: []part{{"spec", "", spec}}, status: 400, errSubstr: `"workspace" is missing`},
		{name: "spec unknown field", parts: []part{{"spec", "", `{"task":"x","tsak":"y"}`}, {"workspace", "p.tar", tarOf(t, file("a", "x"))}}, status: 400, errSubstr: `part "spec": unknown field "tsak"`},
		{name: "spec duplicate key", parts: []part{{"spec", "", `{"task":"x","Task":"y"}`}, {"workspace", "p.tar", tarOf(t, file("a", "x"))}}, status: 400, errSubstr: `part "spec": duplicate key`},
		{name: "spec blank task", parts: []part{{"spec", "", `{"task":" "}`}, {"workspace", "p.tar", tarOf(t, file("a", "x"))}}, status: 400, errSubstr: "task is required"},
		{name: "unknown part", parts: []part{{"spec", "", spec}, {"files", "p.tar", tarOf(t, file("a", "x"))}}, status: 400, errSubstr: `unknown part "files"`},
		{name: "repo and upload", parts: []part{{"spec", "", `{"task":"x","repo":{"url":"https://git.example.com/a/b.git"}}`}, {"workspace", "p.tar", tarOf(t, file("a", "x"))}}, status: 400, errSubstr: `either "repo" or an uploaded workspace`},
		{name: "two archives", parts: []part{{"spec", "", spec}, {"workspace", "a.tar", tarOf(t, file("a", "x"))}, {"workspace", "b.tar", tarOf(t, file("b", "x"))}}, status: 400, errSubstr: "appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupUpload(t, tc.lim)
			resp, data := b.post(t, "/schedule", nil, tc.parts...)
			var e drydock.ErrorBody
			json.Unmarshal(data, &e)
			if resp.StatusCode != tc.status || !strings.Contains(e.Error.Message, tc.errSubstr) {
				t.Errorf("got %d %s; want %d naming %q", resp.StatusCode, data, tc.status, tc.errSubstr)
			}
			b.nothingStored(t)
		})
	}
}

// ws is a valid spec and the given archive.
func ws(archive string) []part {
	return []part{{"spec", "", spec}, {"workspace", "project", archive}}
}

// storedInput lists the stored input archive of a job: name -> what it
// holds (a file's contents, "-> target" for a link, "/" for a directory),
// with the mode.
func (b *uploadBundle) storedInput(t *testing.T, key string) map[string]string {
	t.Helper()
	rc, err := b.arts.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("input blob %q: %v", key, err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatalf("stored input is not gzip: %v", err)
	}
	got := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		var v string
		switch h.Typeflag {
		case tar.TypeDir:
			v = "/"
		case tar.TypeSymlink:
			v = "-> " + h.Linkname
		case tar.TypeLink:
			v = "=> " + h.Linkname
		default:
			data, _ := io.ReadAll(tr)
			v = string(data)
		}
		got[h.Name] = v + " " + os.FileMode(h.Mode).String()
	}
}

// TestUploadCreatesJobWithInput: tar, tar.gz and zip uploads on every
// creation route give a job whose stored input holds the archive's
// entries under clean names, with permission bits only.
func TestUploadCreatesJobWithInput(t *testing.T) {
	t.Parallel()
	setuid := file("bin/tool", "#!/bin/sh\n")
	setuid.hdr.Mode = 0o4755
	entries := []upEntry{dir("./"), dir("./src/"), file("./src/main.go", "package main\n"), setuid,
		symlink("src/link", "../bin/tool"), hardlink("./src/copy.go", "src/main.go"), file("src/nested/deep.txt", "deep")}
	want := map[string]string{
		"src/":                "/ -rwxr-xr-x",
		"src/main.go":         "package main\n -rw-r--r--",
		"bin/tool":            "#!/bin/sh\n -rwxr-xr-x",
		"src/link":            "-> ../bin/tool -rwxrwxrwx",
		"src/copy.go":         "=> src/main.go -rw-------",
		"src/nested/deep.txt": "deep -rw-r--r--",
	}
	zipped := zipOf(t, upZipEntry{"src/", os.ModeDir | 0o755, ""}, upZipEntry{"src/main.go", 0o644, "package main\n"},
		upZipEntry{"bin/tool", 0o4755, "#!/bin/sh\n"}, upZipEntry{"src/link", os.ModeSymlink | 0o777, "../bin/tool"},
		upZipEntry{"src/nested/deep.txt", 0o644, "deep"})
	wantZip := map[string]string{}
	for k, v := range want {
		if k != "src/copy.go" {
			wantZip[k] = v
		}
	}
	for _, tc := range []struct {
		route, format, archive string
		want                   map[string]string
	}{
		{"/schedule", "tar", tarOf(t, entries...), want},
		{"/submit", "tar.gz", gz(tarOf(t, entries...)), want},
		{"/v1/jobs", "zip", zipped, wantZip},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			b := setupUpload(t, api.UploadLimits{})
			resp, data := b.post(t, tc.route, nil, part{"spec", "", `{"task":"fix the failing test","profile":"headless"}`}, part{"workspace", "project", tc.archive})
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("upload: %d %s", resp.StatusCode, data)
			}
			var j drydock.Job
			json.Unmarshal(data, &j)
			stored, err := b.store.GetJob(t.Context(), j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.InputKey == "" || stored.InputSize <= 0 || j.InputSize != stored.InputSize || stored.Task != "fix the failing test" {
				t.Fatalf("stored job input %q size %d (answered %d), task %q", stored.InputKey, stored.InputSize, j.InputSize, stored.Task)
			}
			got := b.storedInput(t, stored.InputKey)
			if !sameMap(got, tc.want) {
				t.Errorf("stored input:\n%s\nwant:\n%s", dump(got), dump(tc.want))
			}
			// Cancelled before any runner took it, the job never needs
			// its input again: it is deleted with the cancel.
			req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/v1/jobs/"+j.ID+"/cancel", nil)
			resp, err = http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusAccepted {
				t.Fatalf("cancel: %v %v", resp, err)
			}
			resp.Body.Close()
			if _, err := b.arts.Get(t.Context(), stored.InputKey); drydock.ErrorCode(err) != drydock.ENOTFOUND {
				t.Errorf("the cancelled job's input is still stored: %v", err)
			}
		})
	}
}

// TestUploadIdempotency: a retried upload under one Idempotency-Key gets
// the first job and leaves one input; another archive under the key is
// refused.
func TestUploadIdempotency(t *testing.T) {
	t.Parallel()
	b := setupUpload(t, api.UploadLimits{})
	key := http.Header{"Idempotency-Key": {"retry-1"}}
	archive := gz(tarOf(t, file("a.txt", "one")))
	resp1, data1 := b.post(t, "/v1/jobs", key, ws(archive)...)
	resp2, data2 := b.post(t, "/v1/jobs", key, ws(archive)...)
	if resp1.StatusCode != 201 || resp2.StatusCode != 201 || resp2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s, retry %d %s", resp1.StatusCode, data1, resp2.StatusCode, data2)
	}
	var j1, j2 drydock.Job
	json.Unmarshal(data1, &j1)
	json.Unmarshal(data2, &j2)
	if j1.ID != j2.ID {
		t.Fatalf("retry made job %s; want %s", j2.ID, j1.ID)
	}
	resp3, data3 := b.post(t, "/v1/jobs", key, ws(gz(tarOf(t, file("a.txt", "two"))))...)
	if resp3.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("another archive under the key: %d %s; want 422", resp3.StatusCode, data3)
	}
	ents, _ := os.ReadDir(b.artsDir)
	if len(ents) != 1 || ents[0].Name() != j1.ID+".input.tar.gz" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("artifacts %v; want only the first job's input", names)
	}
}

// TestUploadNeedsAuth: the archive of a request without a valid token is
// never read or stored.
func TestUploadNeedsAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ct, body := multipartBody(t, ws(tarOf(t, file("a", "x")))...)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/schedule", body)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("upload without a token: %d; want 401", resp.StatusCode)
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func dump(m map[string]string) string {
	var lines []string
	for k, v := range m {
		lines = append(lines, k+": "+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestUploadsAtOnceAreBounded: while a server receives its most uploads,
// one more is 429 and stores nothing; a finished upload frees its slot.
func TestUploadsAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	b := setupUploadConfig(t, api.Config{MaxUploads: 1})
	ct, full := multipartBody(t, ws(tarOf(t, file("a.txt", "x")))...)
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/schedule", pr)
	req.Header.Set("Content-Type", ct)
	first := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	data := full.Bytes()
	pw.Write(data[:len(data)/2]) // the server holds the slot while it reads the rest

	var refused bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !refused; time.Sleep(5 * time.Millisecond) {
		resp, body := b.post(t, "/schedule", nil, ws(tarOf(t, file("b.txt", "x")))...)
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			refused = strings.Contains(string(body), "uploads already")
		case http.StatusCreated:
			// The first request has not reached the server yet (a loaded
			// machine): this upload had the slot to itself. Only a 429
			// while the first holds it shows the bound.
			t.Logf("an upload went through before the first took the slot: %s", body)
		}
	}
	if !refused {
		t.Fatal("no 429 while the only upload slot was held")
	}
	pw.Write(data[len(data)/2:])
	pw.Close()
	if code := <-first; code != http.StatusCreated {
		t.Fatalf("the first upload: %d", code)
	}
	if resp, body := b.post(t, "/schedule", nil, ws(tarOf(t, file("c.txt", "x")))...); resp.StatusCode != http.StatusCreated {
		t.Fatalf("an upload after the slot was freed: %d %s", resp.StatusCode, body)
	}
	if jobs, _, _ := b.store.ListJobs(t.Context(), drydock.JobFilter{}); len(jobs) != 2 {
		t.Errorf("%d jobs; want the first and the last upload's", len(jobs))
	}
}

// Temporary files a crashed server left in its upload directory are
// removed at start once older than any upload; others stay.
func TestStaleUploadsAreRemovedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-3 * time.Hour)
	for _, name := range []string{"drydock-upload-1", "drydock-input-2", "drydock-upload-fresh", "other-file"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("x"), 0o600)
		if name != "drydock-upload-fresh" {
			os.Chtimes(p, old, old)
		}
	}
	setupUploadConfig(t, api.Config{UploadDir: dir})
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if strings.Join(left, ",") != "drydock-upload-fresh,other-file" {
		t.Errorf("left %v; want the fresh upload and the file that is not an upload", left)
	}
}
