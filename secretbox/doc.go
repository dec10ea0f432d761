// Package secretbox holds a job's secret values safely: it seals them for
// the store with AES-256-GCM under the server's key (Box), keeps that key in
// a file (LoadKey, LoadOrCreateKey), and hides the values in byte streams
// that leave the sandbox (NewReader, MaskTar) by replacing each with as many
// '*' as it has bytes, so sizes stay valid.
//
// A sealed value is bound to its job: the job id is the additional data of
// the seal, so a sealed column copied to another job does not open. It also
// names the key it was sealed under (a short id derived from the key), so a
// server whose key changed says so instead of reporting a corrupt value.
package secretbox
