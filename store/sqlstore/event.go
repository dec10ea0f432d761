package sqlstore

import (
	"encoding/json"

	"github.com/drydockhq/drydock"
)

// EventData checks an event as both appends (AppendEvent, AppendMessage)
// do and returns its data as stored: absent data is stored as JSON null.
func EventData(e *drydock.Event) ([]byte, error) {
	if e.JobID == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "event job id is required")
	}
	if e.Type == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "event type is required")
	}
	if len(e.Data) > drydock.MaxEventDataBytes {
		return nil, drydock.Errorf(drydock.ETOOLARGE, "event data is %d bytes; the limit is %d", len(e.Data), drydock.MaxEventDataBytes)
	}
	if len(e.Data) == 0 {
		return []byte("null"), nil
	}
	if !json.Valid(e.Data) {
		return nil, drydock.Errorf(drydock.EINVALID, "event data is not valid JSON")
	}
	return e.Data, nil
}

// StatusData is the data of a status event, as the stores write it when a
// job is created, finishes or is cancelled while pending.
func StatusData(status drydock.JobStatus, msg string) []byte {
	// Two strings always encode: json.Marshal replaces bad UTF-8.
	b, _ := json.Marshal(drydock.StatusEvent{Status: status, Error: msg})
	return b
}
