package transcript_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
)

// ModelTurn holds the provider's own types, so it is not the root
// package's ModelEvent; it must write the same fields (ModelEvent also
// names the fields earlier servers wrote), or readers of the
// log (the CLI, the API document, the SDKs) drift from what the agent
// writes.
func TestModelTurnWritesTheFieldsOfModelEvent(t *testing.T) {
	t.Parallel()
	turn, event := jsonFields(reflect.TypeFor[transcript.ModelTurn]()), jsonFields(reflect.TypeFor[drydock.ModelEvent]())
	// What earlier servers wrote is read (ModelTurn.UnmarshalJSON), not written.
	event = slices.DeleteFunc(event, func(f string) bool { return f == "thinking" || f == "thinking_omitted" || f == "state" })
	if !slices.Equal(turn, event) {
		t.Fatalf("transcript.ModelTurn writes %v; drydock.ModelEvent has %v", turn, event)
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "-" && f.IsExported() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
