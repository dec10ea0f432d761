// Package local implements drydock.ArtifactStore on a directory of the host.
// Blobs are written to a temporary file in the same directory and renamed into
// place, so a crash or a failed upload never leaves a partial archive under a
// key.
package local
