package secretbox_test

import (
	"bytes"
	"testing"

	"github.com/drydockhq/drydock/secretbox"
)

func TestMACIsKeyedAndSeparatedByPurpose(t *testing.T) {
	t.Parallel()
	key := secretbox.GenerateKey()
	a, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	same, _ := secretbox.New(bytes.Clone(key))
	other, _ := secretbox.New(secretbox.GenerateKey())
	data := []byte(`{"secrets":{"API_TOKEN":"hunter2hunter2"}}`)
	m := a.MAC("purpose", data)
	if len(m) != 32 {
		t.Fatalf("MAC is %d bytes; want 32", len(m))
	}
	if !bytes.Equal(m, same.MAC("purpose", data)) {
		t.Error("two boxes with one key disagree: replicas sharing a key must compute the same MAC")
	}
	for what, got := range map[string][]byte{
		"another key":     other.MAC("purpose", data),
		"another purpose": a.MAC("purpose2", data),
		"other data":      a.MAC("purpose", append(bytes.Clone(data), ' ')),
		// purpose and data are not simply concatenated
		"moved boundary": a.MAC("purpos", append([]byte("e"), data...)),
	} {
		if bytes.Equal(m, got) {
			t.Errorf("MAC with %s equals the original", what)
		}
	}
}
