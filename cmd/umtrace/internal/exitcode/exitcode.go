// Package exitcode holds umtrace's exit codes and the error type that
// carries one from wherever it is decided (the opener, a command's
// checks) up to main.
package exitcode

import "errors"

// Exit codes of umtrace (README.md documents them; keep them in sync).
const (
	OK       = 0 // success
	Fail     = 1 // a check failed: gate thresholds, --fail-on-storm, reproduce --validate mismatch
	Usage    = 2 // bad flags, arguments or option values
	BadInput = 3 // an input is missing, unreadable, not a trace/log, or corrupt (batch: at least one input failed)
	Internal = 4 // an output could not be written, out of memory, or an internal error
)

// Error is an error with the exit code it maps to.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// With gives err an exit code (nil stays nil; an err that has a code
// keeps it).
func With(code int, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &Error{code, err}
}

// Of is the exit code of err: OK for nil, the code of an *Error in its
// chain, else Internal.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}
