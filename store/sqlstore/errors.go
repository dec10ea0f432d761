package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
)

// NotFound is the error for a job that does not exist.
func NotFound(id string) error {
	return drydock.Errorf(drydock.ENOTFOUND, "job %s not found", id)
}

// Wrap adds context to internal errors and returns *drydock.Error values
// and the context's own errors as they are, so the code and message the
// caller sees are the ones the store chose.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *drydock.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Exists is the error for a job id that is already taken.
func Exists(id string) error {
	return drydock.Errorf(drydock.ECONFLICT, "job %s already exists", id)
}

// LeaseLost is the error of a lease-guarded write by an owner that does
// not hold the job's lease (any more).
func LeaseLost(id, status, owner string) error {
	return drydock.Errorf(drydock.ELEASELOST, "job %s is %s and not leased to %s", id, status, owner)
}

// CheckClaim checks ClaimJob's arguments.
func CheckClaim(owner string, ttl time.Duration) error {
	if owner == "" {
		return drydock.Errorf(drydock.EINVALID, "lease owner is required")
	}
	return CheckTTL(ttl)
}

// CheckTTL checks the length of a lease.
func CheckTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return drydock.Errorf(drydock.EINVALID, "lease ttl must be positive")
	}
	return nil
}

// CheckFinish refuses to finish a job in a status that is not final.
func CheckFinish(status drydock.JobStatus) error {
	if !status.Terminal() {
		return drydock.Errorf(drydock.EINVALID, "a job cannot finish as %q", status)
	}
	return nil
}

// MessagesClosed is the error of a message to a job in a final status.
func MessagesClosed(id, status string) error {
	return drydock.Errorf(drydock.ECONFLICT, "job %s is %s; its agent reads no more messages", id, status)
}

// TooManyMessages refuses a message past drydock.MaxMessagesPerJob; n is
// how many the job has.
func TooManyMessages(id string, n int) error {
	return drydock.Errorf(drydock.ETOOLARGE, "job %s already has %d messages, the most one job takes; cancel it, or send a follow-up once it has ended", id, n)
}

// EgressFixed is the error of an allowlist change to a job in a final
// status.
func EgressFixed(id, status string) error {
	return drydock.Errorf(drydock.ECONFLICT, "job %s is %s; its egress can no longer change", id, status)
}
