package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

func TestWrapKeepsWhatTheCallerMustSee(t *testing.T) {
	t.Parallel()
	if sqlstore.Wrap("get job x", nil) != nil {
		t.Error("nil wrapped into an error")
	}
	for _, err := range []error{
		sqlstore.NotFound("x"),
		fmt.Errorf("in a transaction: %w", sqlstore.LeaseLost("x", "running", "w")),
		context.Canceled,
		context.DeadlineExceeded,
	} {
		if got := sqlstore.Wrap("op", err); got != err {
			t.Errorf("Wrap(%v) = %v, want it unchanged", err, got)
		}
	}
	internal := errors.New("disk I/O error")
	got := sqlstore.Wrap("get job x", internal)
	if got.Error() != "get job x: disk I/O error" || !errors.Is(got, internal) {
		t.Errorf("an internal error: %v", got)
	}
	if drydock.ErrorCode(got) != drydock.EINTERNAL {
		t.Errorf("an internal error has code %s", drydock.ErrorCode(got))
	}
}

func TestErrorCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		code string
	}{
		{sqlstore.NotFound("x"), drydock.ENOTFOUND},
		{sqlstore.Exists("x"), drydock.ECONFLICT},
		{sqlstore.LeaseLost("x", "running", "w"), drydock.ELEASELOST},
		{sqlstore.MessagesClosed("x", "complete"), drydock.ECONFLICT},
		{sqlstore.TooManyMessages("x", drydock.MaxMessagesPerJob), drydock.ETOOLARGE},
		{sqlstore.EgressFixed("x", "complete"), drydock.ECONFLICT},
		{sqlstore.TokenTaken(), drydock.ECONFLICT},
		{sqlstore.NoSuchToken(), drydock.ENOTFOUND},
		{sqlstore.TokenNotFound("t"), drydock.ENOTFOUND},
		{sqlstore.InvalidCursor(), drydock.EINVALID},
		{sqlstore.CheckClaim("", 1), drydock.EINVALID},
		{sqlstore.CheckClaim("w", 0), drydock.EINVALID},
		{sqlstore.CheckTTL(-1), drydock.EINVALID},
		{sqlstore.CheckFinish(drydock.StatusRunning), drydock.EINVALID},
		{sqlstore.CheckToken(&drydock.Token{Hash: []byte{1}}), drydock.EINVALID},
		{sqlstore.CheckToken(&drydock.Token{ID: "t"}), drydock.EINVALID},
	} {
		if got := drydock.ErrorCode(c.err); got != c.code {
			t.Errorf("%v: code %s, want %s", c.err, got, c.code)
		}
	}
	for _, err := range []error{
		sqlstore.CheckClaim("w", 1), sqlstore.CheckTTL(1), sqlstore.CheckFinish(drydock.StatusComplete),
		sqlstore.CheckToken(&drydock.Token{ID: "t", Hash: []byte{1}}),
	} {
		if err != nil {
			t.Errorf("a valid argument refused: %v", err)
		}
	}
}
