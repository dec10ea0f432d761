package hostclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// ClaimOnce is the host side of a claim for runtimes that keep a directory
// per sandbox. It first creates marker exclusively, holding jobID, so that
// a sandbox is claimed once even by two processes (a second claim fails
// with ECONFLICT), then claims the toolboxd at ep with the old token on a
// client of its own. When the answer is lost (the claim may have taken
// effect, and a retry with the old token is refused), it asks toolboxd
// with the new token whether it did.
func ClaimOnce(ctx context.Context, marker, jobID string, ep drydock.Endpoint, oldToken string, req toolbox.ClaimRequest) error {
	if jobID == "" {
		return drydock.Errorf(drydock.EINVALID, "claim needs a job id")
	}
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return drydock.Errorf(drydock.ECONFLICT, "the sandbox was claimed already")
	}
	if err != nil {
		return fmt.Errorf("mark claim: %w", err)
	}
	_, err = f.WriteString(jobID + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mark claim: %w", err)
	}
	c := toolbox.New(ep, oldToken)
	defer c.Close()
	err = c.Claim(ctx, req)
	if err == nil || drydock.ErrorCode(err) != drydock.EUNAUTHORIZED && drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		return err
	}
	nc := toolbox.New(ep, req.Token)
	defer nc.Close()
	if _, ierr := nc.Info(ctx); ierr == nil {
		return nil
	}
	return err
}
