package s3_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/artifact/artifacttest"
	"github.com/drydockhq/drydock/artifact/s3"
)

const (
	bucket    = "artifacts"
	accessKey = "AKIDDRYDOCKTEST"
	secretKey = "drydock-test-secret"
)

// fixture is an in-process S3 (gofakes3, in memory) on 127.0.0.1 and a
// record of the requests it got.
type fixture struct {
	srv *httptest.Server
	url string // the s3:// URL of the store

	mu       sync.Mutex
	requests []string // method and query keys, e.g. "POST uploads"
	authKeys []string // access key ids from Authorization headers
}

func setup(t *testing.T) *fixture {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(backend)
	f := &fixture{}
	h := faker.Server()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		q := make([]string, 0, len(r.URL.Query()))
		for k := range r.URL.Query() {
			q = append(q, k)
		}
		f.requests = append(f.requests, r.Method+" "+strings.Join(q, ","))
		if _, rest, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
			id, _, _ := strings.Cut(rest, "/")
			f.authKeys = append(f.authKeys, id)
		}
		f.mu.Unlock()
		if r.Header.Get("X-Amz-Content-Sha256") == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" && r.URL.Query().Has("uploadId") {
			// gofakes3 decodes aws-chunked bodies of whole-object PUTs
			// but stores those of multipart parts as they come, framing
			// included; S3 decodes both, so this front does it for parts.
			dechunk(t, r)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	f.url = "s3://" + bucket + "/jobs/archives?endpoint=" + f.srv.URL + "&region=us-east-1&path_style=true"
	return f
}

// dechunk replaces an aws-chunked body ("<hex size>;chunk-signature=...\r\n
// <data>\r\n" up to a chunk of size 0) with its data.
func dechunk(t *testing.T, r *http.Request) {
	br := bufio.NewReader(r.Body)
	var body bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Errorf("aws-chunked body: %v", err)
			return
		}
		sizeHex, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		size, err := strconv.ParseInt(sizeHex, 16, 64)
		if err != nil {
			t.Errorf("aws-chunked chunk header %q: %v", line, err)
			return
		}
		if size == 0 {
			break
		}
		if _, err := io.CopyN(&body, br, size); err != nil {
			t.Errorf("aws-chunked chunk: %v", err)
			return
		}
		if crlf, _ := br.ReadString('\n'); crlf != "\r\n" {
			t.Errorf("aws-chunked chunk ends with %q", crlf)
			return
		}
	}
	if want := r.Header.Get("X-Amz-Decoded-Content-Length"); want != strconv.Itoa(body.Len()) {
		t.Errorf("aws-chunked body of %d bytes, header says %s", body.Len(), want)
	}
	r.Body.Close()
	r.Body = io.NopCloser(&body)
	r.ContentLength = int64(body.Len())
	r.Header.Set("Content-Length", strconv.Itoa(body.Len()))
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	r.Header.Del("Content-Encoding")
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

var testEnv = env(map[string]string{"AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey})

func (f *fixture) open(t *testing.T, partSize uint64) *s3.Store {
	t.Helper()
	o, err := s3.ParseURL(f.url, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	o.PartSize = partSize
	st, err := s3.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestConformance(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) drydock.ArtifactStore {
		return setup(t).open(t, 5<<20)
	}, artifacttest.Options{})
}

// The prefix is in the object's name, the type is gzip's, and the
// credentials are in every request's signature.
func TestObjectsUnderThePrefixSigned(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st, err := s3.Open(t.Context(), f.url, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := st.Put(ctx, "job1.tar.gz", strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	info, err := st.Client().StatObject(ctx, bucket, "jobs/archives/job1.tar.gz", minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("object not under the prefix: %v", err)
	}
	if info.ContentType != "application/gzip" {
		t.Errorf("content type %q, want application/gzip", info.ContentType)
	}
	f.mu.Lock()
	keys := f.authKeys
	f.mu.Unlock()
	if len(keys) == 0 || !all(keys, accessKey) {
		t.Errorf("requests signed with %v, want every one with %s", keys, accessKey)
	}
}

func all(list []string, want string) bool {
	for _, s := range list {
		if s != want {
			return false
		}
	}
	return true
}

func readAll(t *testing.T, st *s3.Store, key string) []byte {
	t.Helper()
	rc, err := st.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

// An archive of unknown length (a pipe) larger than a part goes up in
// parts of at most PartSize; the suite checks that it comes back whole.
func TestLargePutGoesUpInParts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := f.open(t, 5<<20)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(func() error {
			_, err := io.Copy(pw, io.LimitReader(zeros{}, 12<<20+12345))
			return err
		}())
	}()
	if _, err := st.Put(t.Context(), "big.tar.gz", pr); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, "PUT ") && strings.Contains(r, "uploadId") {
			parts++
		}
	}
	if parts != 3 {
		t.Errorf("uploaded %d parts, want 3 of at most 5 MiB (requests: %v)", parts, f.requests)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A Put whose source fails, or whose context ends, leaves no object in the
// bucket and (when it can be aborted) no unfinished upload, which S3 would
// otherwise bill for.
func TestFailedPutLeavesNoUpload(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := f.open(t, 5<<20)
	ctx := t.Context()
	if _, err := st.Put(ctx, "kept.tar.gz", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("tar stream broke")
	for _, key := range []string{"new.tar.gz", "kept.tar.gz"} {
		// More than one part goes up before the source fails.
		r := io.MultiReader(bytes.NewReader(make([]byte, 7<<20)), artifacttest.FailingReader{Err: boom})
		if _, err := st.Put(ctx, key, r); !errors.Is(err, boom) {
			t.Errorf("Put %s with a failing source: %v, want %v", key, err, boom)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	r := &artifacttest.CancelAfter{R: bytes.NewReader(make([]byte, 8<<20)), N: 6 << 20, Cancel: cancel}
	if _, err := st.Put(cctx, "cancelled.tar.gz", r); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v, want %v", err, context.Canceled)
	}

	if _, err := st.Get(ctx, "new.tar.gz"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("Get after a failed Put: %v, want %s", err, drydock.ENOTFOUND)
	}
	if _, err := st.Get(ctx, "cancelled.tar.gz"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("Get after a cancelled Put: %v, want %s", err, drydock.ENOTFOUND)
	}
	if got := readAll(t, st, "kept.tar.gz"); string(got) != "old" {
		t.Errorf("a failed overwrite changed the object to %d bytes", len(got))
	}
	var objects []string
	for o := range st.Client().ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		objects = append(objects, o.Key)
	}
	if diff := cmp.Diff([]string{"jobs/archives/kept.tar.gz"}, objects); diff != "" {
		t.Errorf("objects in the bucket (-want +got):\n%s", diff)
	}
	// The cancelled upload could not be aborted with its own context, so
	// only the failed-source uploads are sure to be gone.
	var pending []string
	for u := range st.Client().ListIncompleteUploads(ctx, bucket, "jobs/archives/", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		pending = append(pending, u.Key)
	}
	for _, k := range pending {
		if k != "jobs/archives/cancelled.tar.gz" {
			t.Errorf("unfinished upload left for %s", k)
		}
	}
}

func TestNewChecksTheBucket(t *testing.T) {
	t.Parallel()
	f := setup(t)
	o, err := s3.ParseURL(strings.Replace(f.url, "s3://"+bucket, "s3://no-such-bucket", 1), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.New(t.Context(), o); err == nil || !strings.Contains(err.Error(), "no-such-bucket does not exist") {
		t.Errorf("New on a missing bucket: %v, want an error naming it", err)
	}
}

// A store that does not answer is EUNAVAILABLE, so callers may retry.
func TestUnreachableStore(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	o, err := s3.ParseURL("s3://bucket?endpoint=http://"+addr+"&region=us-east-1&path_style=true", testEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	o.Transport = &http.Transport{DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}
	_, err = s3.New(ctx, o)
	if drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		t.Errorf("New against a closed port: %v (code %s), want %s", err, drydock.ErrorCode(err), drydock.EUNAVAILABLE)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	ignoreCreds := cmpopts.IgnoreFields(s3.Options{}, "Credentials")
	for _, tc := range []struct {
		url  string
		want s3.Options
	}{
		{"s3://bucket", s3.Options{Bucket: "bucket"}},
		{"s3://bucket/a/b/", s3.Options{Bucket: "bucket", Prefix: "a/b"}},
		{"s3://bucket/p?endpoint=http://127.0.0.1:9000&region=eu-west-3&path_style=true",
			s3.Options{Bucket: "bucket", Prefix: "p", Endpoint: "127.0.0.1:9000", Insecure: true, Region: "eu-west-3", PathStyle: true}},
		{"s3://bucket?endpoint=https://minio.example.com", s3.Options{Bucket: "bucket", Endpoint: "minio.example.com"}},
	} {
		got, err := s3.ParseURL(tc.url, testEnv)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.url, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, ignoreCreds); diff != "" {
			t.Errorf("ParseURL(%q) (-want +got):\n%s", tc.url, diff)
		}
		v, err := got.Credentials.Get()
		if err != nil || v.AccessKeyID != accessKey || v.SecretAccessKey != secretKey {
			t.Errorf("ParseURL(%q): credentials %q, %v; want the environment's", tc.url, v.AccessKeyID, err)
		}
	}
	for _, bad := range []string{
		"", "bucket", "http://bucket", "s3://", "s3:///prefix",
		"s3://key:secret@bucket", "s3://bucket?endpoint=127.0.0.1:9000", "s3://bucket?endpoint=ftp://h",
		"s3://bucket?endpoint=http://h/path", "s3://bucket?path_style=yes", "s3://bucket?regoin=x",
	} {
		if _, err := s3.ParseURL(bad, testEnv); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
	if _, err := s3.ParseURL("s3://b", env(map[string]string{"AWS_ACCESS_KEY_ID": "x"})); err == nil {
		t.Error("ParseURL with a key id and no secret succeeded")
	}
	o, err := s3.ParseURL("s3://b", env(nil))
	if err != nil || o.Credentials != nil {
		t.Errorf("ParseURL without credentials in the environment = %v, %v; want nil credentials (the default chain)", o.Credentials, err)
	}
	with, _ := s3.ParseURL("s3://b", env(map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}))
	if v, _ := with.Credentials.Get(); v.SessionToken != "t" {
		t.Errorf("session token %q, want t", v.SessionToken)
	}
}
