package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/drydockhq/drydock"
)

// DefaultRetries is how many times Schedule sends a request again when its
// answer was lost.
const DefaultRetries = 5

// ScheduleOption configures one Schedule call.
type ScheduleOption func(*scheduleOptions)

type scheduleOptions struct {
	key       string
	workspace func() (io.ReadCloser, error) // WithWorkspace
}

// WithIdempotencyKey makes Schedule send key as the request's
// Idempotency-Key instead of a fresh random one. Pass the same key when
// scheduling again after a failure whose outcome is unknown (a
// *ScheduleError): within the server's key lifetime (24 h by default) the
// server returns the job the first request created, if it did, and creates
// it otherwise. Reusing a key for another job fails with
// drydock.EKEYREUSED.
func WithIdempotencyKey(key string) ScheduleOption {
	return func(o *scheduleOptions) { o.key = key }
}

// NewIdempotencyKey returns a random key for WithIdempotencyKey (a UUIDv7:
// 74 random bits and the time, so keys never repeat in practice).
func NewIdempotencyKey() string {
	// NewV7 fails only when the system's random source does, which Go
	// treats as fatal anyway.
	return uuid.Must(uuid.NewV7()).String()
}

// ScheduleError is the error of a Schedule call that may or may not have
// created the job: the server got no request or its answer was lost, every
// retry too, or ctx ended while waiting. Scheduling again with
// WithIdempotencyKey(Key) is safe: it cannot create a second job.
type ScheduleError struct {
	Key      string // the Idempotency-Key every attempt sent
	Attempts int    // requests sent
	Err      error  // the last attempt's error
}

func (e *ScheduleError) Error() string {
	return fmt.Sprintf("schedule: no answer after %d attempt(s) with Idempotency-Key %s; the job may exist: scheduling again with this key returns it instead of creating another: %v",
		e.Attempts, e.Key, e.Err)
}

func (e *ScheduleError) Unwrap() error { return e.Err }

// Schedule creates a job and returns it as the server stored it (pending,
// with its links). WithWorkspace sends files for the job to start from. A
// nil spec.Egress takes the server's default list (--egress-default); a
// non-nil empty one asks for no network at all.
//
// Every request carries an Idempotency-Key (random unless
// WithIdempotencyKey gives one), so that Schedule can send it again when
// the answer is lost (the connection fails or a gateway answers 502, 503
// or 504) without creating a second job: the server answers a repeat with
// the job the first request created. It retries up to DefaultRetries
// times (WithRetries) with exponential backoff and jitter. When the
// outcome stays unknown the error is a *ScheduleError naming the key.
func (c *Client) Schedule(ctx context.Context, spec drydock.JobSpec, opts ...ScheduleOption) (*drydock.Job, error) {
	var o scheduleOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.key == "" {
		o.key = NewIdempotencyKey()
	} else if err := drydock.CheckIdempotencyKey(o.key); err != nil {
		return nil, err
	}
	hdr := http.Header{"Idempotency-Key": {sfString(o.key)}}
	return c.createRetrying(ctx, o.key, func() (*drydock.Job, bool, error) {
		return c.scheduleOnce(ctx, spec, o.workspace, hdr)
	})
}

// createRetrying sends a creation request under an Idempotency-Key (once
// sends it and says whether its outcome is unknown) until it is answered,
// retries are spent or ctx ends; an outcome that stays unknown is a
// *ScheduleError naming the key.
func (c *Client) createRetrying(ctx context.Context, key string, once func() (*drydock.Job, bool, error)) (*drydock.Job, error) {
	for attempt := 1; ; attempt++ {
		j, retry, err := once()
		if err == nil {
			return j, nil
		}
		if !retry {
			return nil, err
		}
		if ctx.Err() != nil || attempt > c.retries {
			return nil, &ScheduleError{Key: key, Attempts: attempt, Err: err}
		}
		t := time.NewTimer(c.retryDelay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &ScheduleError{Key: key, Attempts: attempt, Err: fmt.Errorf("%w (after: %v)", context.Cause(ctx), err)}
		case <-t.C:
		}
	}
}

// scheduleOnce sends one creation request. retry says whether the outcome
// is unknown (the request may have created the job), so that it is worth
// sending again with the same key.
func (c *Client) scheduleOnce(ctx context.Context, spec drydock.JobSpec, workspace func() (io.ReadCloser, error), hdr http.Header) (_ *drydock.Job, retry bool, _ error) {
	var (
		resp *http.Response
		err  error
	)
	if workspace != nil {
		resp, err = c.sendUpload(ctx, spec, workspace, hdr)
	} else {
		resp, err = c.send(ctx, http.MethodPost, "/v1/jobs", nil, specBody(spec), hdr)
	}
	return c.createdJob(ctx, "/v1/jobs", resp, err)
}

// createdJob reads the answer of a creation request (resp and err as send
// returned them): the job, or an error and whether the outcome is unknown,
// so that the request is worth sending again with the same key.
func (c *Client) createdJob(ctx context.Context, path string, resp *http.Response, err error) (_ *drydock.Job, retry bool, _ error) {
	if err != nil {
		var ce *ConnError
		return nil, errors.As(err, &ce) || ctx.Err() != nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		return nil, true, c.decodeError(resp)
	case resp.StatusCode < 200 || resp.StatusCode > 299, resp.StatusCode == http.StatusAccepted:
		// 202 is a message stored for a running job's agent, not a job.
		return nil, false, c.decodeError(resp)
	}
	body, err := c.jsonBody(resp)
	if err != nil {
		// A page, not a Drydock server's JSON: nothing was created, and
		// asking again would not change that.
		return nil, false, err
	}
	var j drydock.Job
	if err := json.NewDecoder(body).Decode(&j); err != nil {
		// The job exists but its answer was cut: a retry fetches it.
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, true, fmt.Errorf("read the answer of POST %s: %w", path, err)
	}
	return &j, false, nil
}

// retryDelay is the pause before retry n (1, 2, ...): the event streams'
// reconnect backoff, doubling from backoffMin up to backoffMax.
func (c *Client) retryDelay(n int) time.Duration {
	d := c.backoffMin << min(n-1, 20)
	if d <= 0 || d > c.backoffMax {
		d = c.backoffMax
	}
	return jitter(d)
}

// jitter draws a pause from the upper half of d, so that clients cut off
// together (a restarted server) do not come back in lockstep.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// sfString writes key as a Structured Field String, the form the
// Idempotency-Key draft gives the header.
func sfString(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}

// specBody is spec as a creation request sends it. JobSpec leaves an empty
// egress list out, and no list means the server's default, so an empty one
// is said outright: [] (nothing).
func specBody(spec drydock.JobSpec) any {
	if spec.Egress != nil && len(spec.Egress) == 0 {
		return struct {
			drydock.JobSpec
			Egress []string `json:"egress"`
		}{spec, []string{}}
	}
	return spec
}
