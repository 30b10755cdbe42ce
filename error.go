package saver

import (
	"context"
	"errors"
	"fmt"
)

// Error codes. Every error that leaves a store or the API carries one of them;
// the API maps them to HTTP statuses in one place.
const (
	EINVALID      = "invalid"      // bad input: the caller must change the request
	ENOTFOUND     = "not_found"    // the thing asked for does not exist
	ECONFLICT     = "conflict"     // a condition on the stored state did not hold
	ETOOLARGE     = "too_large"    // a body, payload or count is over a limit
	EUNAVAILABLE  = "unavailable"  // a backend is down or throttling; retry later
	EUNAUTHORIZED = "unauthorized" // no valid credentials
	EINTERNAL     = "internal"     // a bug or corrupt data; details only in logs
)

// Error is an application error: a code from the list above and a message
// written for the caller.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("saver error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the application error in err's chain, or
// EINTERNAL for any other error, and "" for nil. A context that ran out or was
// cancelled is EUNAVAILABLE: the work may succeed when retried.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return EUNAVAILABLE
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the application error in err's chain.
// Other errors get a generic message: their details are for the operator's
// logs, not for the caller.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "The request ran out of time; retry later."
	}
	return "Internal error."
}
