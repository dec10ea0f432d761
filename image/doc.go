// Package image builds Drydock's sandbox image without a registry.
//
// A Debian bookworm root filesystem is made with mmdebstrap from the package
// lists in packages/ (headless.txt, plus desktop.txt for the desktop profile),
// finished by setup.sh (Node.js, npm, TypeScript and @types/node from the npm
// tarballs pinned by integrity in packages/npm.txt, fetched from the
// operator's npm registry; the agent user, uid 1000; /workspace; Chromium's
// flags), and
// imported into the engine (Docker or Podman, through the Docker Engine API) as
// a base image. The static toolboxd binary is then added as a thin layer on
// top (create a container, copy the file in, commit with the image's
// configuration), so a new toolboxd build re-layers in about a second instead
// of importing the root filesystem (1.6 GB headless, 2.4 GB desktop) again.
//
// Every step is cached by a hash of its inputs:
//
//   - the npm tarballs under Options.CacheDir/npm, by integrity;
//   - the rootfs tarball under Options.CacheDir, keyed by the package lists,
//     setup.sh and the mmdebstrap arguments;
//   - the base image, tagged drydock-sandbox-base:<profile>-<hash>, keyed by
//     the rootfs and the image configuration;
//   - the final image, tagged drydock-sandbox:<profile>-<hash> where the hash
//     also covers toolboxd and the image configuration. It is tagged
//     drydock-sandbox:<profile> too, which is what runtimes use by default.
//
// A build whose inputs did not change finds the final tag and returns in well
// under a second.
//
// The Dockerfile at the repository root produces the same image from
// debian:bookworm-slim for users who have a registry; it reads the same
// package lists and setup.sh, and fetches the npm tarballs with npm-fetch.sh.
package image
