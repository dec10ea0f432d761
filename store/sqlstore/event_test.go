package sqlstore_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

func TestEventData(t *testing.T) {
	t.Parallel()
	ok := func(data string) drydock.Event {
		return drydock.Event{JobID: "j", Type: drydock.EventLog, Data: json.RawMessage(data)}
	}
	for _, c := range []struct {
		name string
		e    drydock.Event
		want string // stored data, or the error code
	}{
		{"data kept as given", ok(`{"b": 1,  "a": [2]}`), `{"b": 1,  "a": [2]}`},
		{"no data is null", ok(""), "null"},
		{"no job", drydock.Event{Type: drydock.EventLog}, drydock.EINVALID},
		{"no type", drydock.Event{JobID: "j"}, drydock.EINVALID},
		{"not JSON", ok(`{"a":`), drydock.EINVALID},
		{"too large", ok(`"` + string(bytes.Repeat([]byte("x"), drydock.MaxEventDataBytes)) + `"`), drydock.ETOOLARGE},
	} {
		got, err := sqlstore.EventData(&c.e)
		if err != nil {
			if drydock.ErrorCode(err) != c.want {
				t.Errorf("%s: %v, want %s", c.name, err, c.want)
			}
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: stored %s, want %s", c.name, got, c.want)
		}
	}
}

func TestStatusData(t *testing.T) {
	t.Parallel()
	if got := string(sqlstore.StatusData(drydock.StatusPending, "")); got != `{"status":"pending"}` {
		t.Errorf("pending: %s", got)
	}
	if got := string(sqlstore.StatusData(drydock.StatusError, "boom")); got != `{"status":"error","error":"boom"}` {
		t.Errorf("error: %s", got)
	}
}
