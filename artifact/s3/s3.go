package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/drydockhq/drydock"
)

var _ drydock.ArtifactStore = (*Store)(nil)

// DefaultPartSize is the memory one Put holds, and a ten-thousandth of the
// largest archive it can store (S3 allows 10,000 parts): 160 GiB.
const DefaultPartSize = 16 << 20

// minPartSize is S3's smallest part but the last.
const minPartSize = 5 << 20

// Options configures a Store.
type Options struct {
	// Endpoint is host[:port] of the S3 API; empty means s3.amazonaws.com.
	Endpoint string
	// Insecure talks plain HTTP (a store on the same host or network).
	Insecure bool
	// Region; empty lets the client find out (AWS) or use us-east-1.
	Region string
	// Bucket must exist. Required.
	Bucket string
	// Prefix is put before every key, with a slash.
	Prefix string
	// PathStyle sends the bucket in the path, not the host name.
	PathStyle bool
	// Credentials; nil means the AWS environment variables, the shared
	// credentials file, then the instance or container role.
	Credentials *credentials.Credentials
	// PartSize of multipart uploads; 0 means DefaultPartSize, at least
	// 5 MiB.
	PartSize uint64
	// Transport overrides the HTTP transport (tests, custom CAs).
	Transport http.RoundTripper
}

// Store keeps artifacts as objects in a bucket.
type Store struct {
	cli    *minio.Client
	bucket string
	prefix string
	part   uint64
}

// ParseURL reads s3://BUCKET[/PREFIX]?endpoint=...&region=...&path_style=...
// and the credentials in the environment getenv reads (os.Getenv in
// production).
func ParseURL(raw string, getenv func(string) string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Options{}, fmt.Errorf("artifact store URL: %w", err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Options{}, fmt.Errorf("artifact store URL %q: want s3://BUCKET[/PREFIX][?endpoint=...]", redact(u))
	}
	if u.User != nil {
		return Options{}, errors.New("artifact store URL: put credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, not in the URL")
	}
	o := Options{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "path_style":
		default:
			return Options{}, fmt.Errorf("artifact store URL: unknown parameter %q (known: endpoint, region, path_style)", k)
		}
	}
	if ep := q.Get("endpoint"); ep != "" {
		e, err := url.Parse(ep)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || (e.Path != "" && e.Path != "/") {
			return Options{}, fmt.Errorf("artifact store URL: endpoint %q must be http(s)://HOST[:PORT]", ep)
		}
		o.Endpoint, o.Insecure = e.Host, e.Scheme == "http"
	}
	o.Region = q.Get("region")
	switch q.Get("path_style") {
	case "", "false":
	case "true":
		o.PathStyle = true
	default:
		return Options{}, fmt.Errorf("artifact store URL: path_style must be true or false")
	}
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if (id == "") != (secret == "") {
		return Options{}, errors.New("artifact store: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither")
	}
	if id != "" {
		o.Credentials = credentials.NewStaticV4(id, secret, getenv("AWS_SESSION_TOKEN"))
	}
	return o, nil
}

// Open parses the URL, with credentials from the process environment, and
// opens the store.
func Open(ctx context.Context, raw string, getenv func(string) string) (*Store, error) {
	o, err := ParseURL(raw, getenv)
	if err != nil {
		return nil, err
	}
	return New(ctx, o)
}

// New connects and checks that the bucket exists, so that a wrong name or
// key fails at start and not at the end of the first job.
func New(ctx context.Context, o Options) (*Store, error) {
	if o.Bucket == "" {
		return nil, errors.New("artifact store: no bucket")
	}
	if o.Endpoint == "" {
		o.Endpoint = "s3.amazonaws.com"
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < minPartSize {
		return nil, fmt.Errorf("artifact store: part size %d is below S3's minimum of 5 MiB", o.PartSize)
	}
	creds := o.Credentials
	if creds == nil {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if o.PathStyle {
		lookup = minio.BucketLookupPath
	}
	cli, err := minio.New(o.Endpoint, &minio.Options{
		Creds:        creds,
		Secure:       !o.Insecure,
		Region:       o.Region,
		BucketLookup: lookup,
		Transport:    o.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("artifact store %s: %w", o.Endpoint, err)
	}
	ok, err := cli.BucketExists(ctx, o.Bucket)
	if err != nil {
		return nil, storeError(fmt.Sprintf("artifact store: check bucket %s at %s", o.Bucket, o.Endpoint), err)
	}
	if !ok {
		return nil, fmt.Errorf("artifact store: bucket %s does not exist at %s; create it first", o.Bucket, o.Endpoint)
	}
	return &Store{cli: cli, bucket: o.Bucket, prefix: o.Prefix, part: o.PartSize}, nil
}

// Client returns the minio client, for what the ArtifactStore interface
// does not offer.
func (s *Store) Client() *minio.Client { return s.cli }

func (s *Store) object(key string) (string, error) {
	if err := drydock.CheckArtifactKey(key); err != nil {
		return "", err
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// Put implements drydock.ArtifactStore: a multipart upload of unknown size,
// one part in memory at a time.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	name, err := s.object(key)
	if err != nil {
		return 0, err
	}
	// An empty blob (the diff of a job that changed nothing) is sent as
	// size 0 and unsigned: as a stream of unknown length, or signed with
	// minio-go's streaming signature over plain HTTP, it goes chunked with
	// no Content-Length, which the S3 API refuses (MissingContentLength).
	size, body := int64(-1), io.Reader(ctxReader{ctx, r})
	var first [1]byte
	switch n, err := io.ReadFull(body, first[:]); {
	case err == io.EOF:
		size, body = 0, bytes.NewReader(nil)
	case err != nil:
		return 0, fmt.Errorf("put artifact %s: %w", key, err)
	default:
		body = io.MultiReader(bytes.NewReader(first[:n]), body)
	}
	info, err := s.cli.PutObject(ctx, s.bucket, name, body, size, minio.PutObjectOptions{
		ContentType:          "application/gzip",
		PartSize:             s.part,
		DisableContentSha256: size == 0,
	})
	if err != nil {
		return 0, storeError(fmt.Sprintf("put artifact %s", key), err)
	}
	return info.Size, nil
}

// Get implements drydock.ArtifactStore. The first request is made here, so
// that a missing key is ENOTFOUND now rather than an error on the first
// Read.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	obj, err := s.cli.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, storeError(fmt.Sprintf("get artifact %s", key), err)
	}
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, drydock.Errorf(drydock.ENOTFOUND, "artifact %s not found", key)
		}
		return nil, storeError(fmt.Sprintf("get artifact %s", key), err)
	}
	return obj, nil
}

// Delete implements drydock.ArtifactStore; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	if err := s.cli.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil && minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		return storeError(fmt.Sprintf("delete artifact %s", key), err)
	}
	return nil
}

// storeError marks what a retry may fix (the store unreachable, overloaded
// or failing) as EUNAVAILABLE; the detail stays in the wrapped error, for
// the logs.
func storeError(op string, err error) error {
	var netErr net.Error
	resp := minio.ToErrorResponse(err)
	if errors.As(err, &netErr) || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.Code == "SlowDown" {
		return fmt.Errorf("%s: %w: %w", op, drydock.Errorf(drydock.EUNAVAILABLE, "artifact store unavailable"), err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// redact drops the query, which may hold an endpoint with credentials.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

// ctxReader stops a long upload at the next read once the context ends;
// minio-go only looks at the context between requests.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
