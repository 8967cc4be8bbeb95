package contivconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Duration is a time.Duration written in configuration as a string such as
// "500ms", "10m" or "1h30m". The plain number 0 is accepted too; any other
// bare number is refused because its unit would be a guess.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d like time.Duration does, e.g. "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a duration string, or the number 0.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if json.Unmarshal(b, &n) == nil {
			if f, err := n.Float64(); err == nil && f == 0 {
				*d = 0
				return nil
			}
			return fmt.Errorf("a bare number has no unit: write it like \"%ss\" or \"%sm\"", n, n)
		}
		return errors.New(`want a duration like "90s", "10m" or "1h30m"`)
	}
	return d.Set(s)
}

// Set parses a duration string (flag.Value).
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New(`want a duration like "90s", "10m" or "1h30m"`)
	}
	*d = Duration(v)
	return nil
}
