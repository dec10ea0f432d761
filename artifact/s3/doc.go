// Package s3 implements drydock.ArtifactStore on any S3-compatible object
// store (AWS S3, MinIO, Ceph RGW, Garage, SeaweedFS, R2, ...) through
// minio-go.
//
// A store is named by a URL:
//
//	s3://BUCKET[/PREFIX][?endpoint=URL&region=REGION&path_style=true]
//
// endpoint is the server's base URL (http:// or https://; default
// https://s3.amazonaws.com), region its region (default us-east-1 for other
// endpoints than AWS's, where it is looked up), path_style forces
// path-style requests, which most self-hosted stores want. Credentials come
// from the standard variables AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN; without them, from the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE) and then the cloud's instance,
// container or web-identity role.
//
// Put streams: the archive is never whole in memory nor on disk. Its size is
// unknown in advance, so every Put is a multipart upload holding one part
// (PartSize, 16 MiB by default; at most 10,000 parts, so 160 GiB) in
// memory at a time. The object appears only when the upload completes, so a
// failed Put leaves nothing under its key; the upload is aborted, and if
// even the abort fails (the store is down) a bucket lifecycle rule for
// incomplete multipart uploads cleans up the parts. Get streams the object
// back.
package s3
