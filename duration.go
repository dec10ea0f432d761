package drydock

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that reads "90s"/"15m" or a number of seconds
// from JSON and writes the string form, because users type both.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		*d = Duration(time.Duration(x * float64(time.Second)))
	case string:
		p, err := time.ParseDuration(x)
		if err != nil {
			return fmt.Errorf("duration %q: use a number of seconds or a string such as \"90s\" or \"15m\"", x)
		}
		*d = Duration(p)
	default:
		return fmt.Errorf("duration must be a number of seconds or a string such as \"15m\"")
	}
	return nil
}
