package contivconf

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalid is matched (errors.Is) by every error about the content of the
// configuration: syntax, unknown fields, wrong types and bad values. Such an
// error never goes away by retrying; the agent refuses to start.
var ErrInvalid = errors.New("invalid configuration")

// FieldError is one problem with one configuration field. Errors returned by
// Parse, Load, ApplyEnv, ApplyFlags and Validate join one FieldError per
// problem (errors.Join); errors.As finds the first of them.
type FieldError struct {
	// Path names the field, e.g. "ipam.podSubnetCIDR" or
	// "nodeConfig[1].mainInterface.ipCIDR".
	Path string
	// Source says where the value came from when it is not the file, e.g.
	// "env CONTIV_VPP_SIMULATE" or "flag --vpp-simulate"; empty otherwise.
	Source string
	// Value is the bad value as it would be written in YAML; empty when the
	// problem is a missing or unknown field.
	Value string
	// Msg says what is wrong or what is expected.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

// Error formats the problem as "path (from source): invalid value V: msg".
func (e *FieldError) Error() string {
	s := e.Path
	if e.Source != "" {
		s += " (from " + e.Source + ")"
	}
	if e.Value != "" {
		s += ": invalid value " + e.Value
	}
	return s + ": " + e.Msg
}

// Unwrap returns the cause, if any.
func (e *FieldError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid: every FieldError is.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// problems collects FieldErrors.
type problems []error

// add records a problem with the field at path whose value is v (rendered
// by show; nil for none).
func (p *problems) add(path string, v any, format string, args ...any) {
	*p = append(*p, &FieldError{Path: path, Value: show(v), Msg: fmt.Sprintf(format, args...)})
}

// err joins the problems; nil when there are none.
func (p problems) err() error { return errors.Join(p...) }

// rendered is a value already rendered for FieldError.Value.
type rendered string

// show renders a value as it would be written in YAML: strings quoted,
// everything else by its String form.
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case rendered:
		return string(v)
	case string:
		return strconv.Quote(v)
	case Duration:
		return strconv.Quote(v.String())
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(v)
}
