package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/drydockhq/drydock"
)

// WithToolboxd returns an image that is base with opts.Toolboxd installed
// in place of the toolboxd it has, without rebuilding the rootfs and
// without moving the drydock-sandbox:<profile> tag: a toolboxd under
// development can be tried in the real image while other users of the
// engine keep theirs. Its reference names the base and the binary, so an
// unchanged pair is reused. Only Profile, Toolboxd, DockerHost and Progress
// of opts are used.
func WithToolboxd(ctx context.Context, opts Options, base string) (string, error) {
	if opts.Profile == "" {
		opts.Profile = drydock.ProfileHeadless
	}
	if !opts.Profile.Valid() {
		return "", drydock.Errorf(drydock.EINVALID, "unknown profile %q (want headless or desktop)", opts.Profile)
	}
	if err := checkStatic(opts.Toolboxd); err != nil {
		return "", err
	}
	out := opts.Progress
	if out == nil {
		out = io.Discard
	}
	cli, err := NewClient(opts.DockerHost)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	b := &builder{opts: opts, cli: cli, out: out, start: time.Now(), profile: opts.Profile}
	inspect, err := cli.ImageInspect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("inspect base image %s: %w", base, err)
	}
	toolboxdHash, err := fileHash(opts.Toolboxd)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "drydock-relayer-v1\nbase %s\ntoolboxd %s\n", inspect.ID, toolboxdHash)
	ref := fmt.Sprintf("%s:%s-dev-%s", Repository, opts.Profile, hex.EncodeToString(h.Sum(nil))[:12])
	if ok, err := b.imageExists(ctx, ref); err != nil || ok {
		return ref, err
	}
	if err := b.addToolboxd(ctx, base, ref); err != nil {
		return "", err
	}
	b.logf("built %s from %s", ref, base)
	return ref, nil
}
