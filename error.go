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
	EGONE         = "gone"         // the thing written to was deleted: a write must not bring it back
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

// The errors below are the ones every store returns for the same cause, so
// that a caller reads the same message whichever store answers.

// NoCheckpoint is the error for a namespace that has no live checkpoint:
// GetTuple's for the latest when there is none.
func NoCheckpoint(threadID, ns string) *Error {
	return Errorf(ENOTFOUND, "Thread %q has no checkpoint in namespace %q.", threadID, ns)
}

// CheckpointNotFound is the error for a checkpoint that ref names and that
// does not exist or has expired; for an empty ref.ID (the latest) it is
// NoCheckpoint's.
func CheckpointNotFound(ref CheckpointRef) *Error {
	if ref.ID == "" {
		return NoCheckpoint(ref.ThreadID, ref.NS)
	}
	return Errorf(ENOTFOUND, "Checkpoint %q not found in thread %q, namespace %q.", ref.ID, ref.ThreadID, ref.NS)
}

// ThreadNotFound is the error for a thread with no live checkpoint in any
// namespace: CopyThread's source, a tree query's thread.
func ThreadNotFound(threadID string) *Error {
	return Errorf(ENOTFOUND, "Thread %q has no checkpoint.", threadID)
}

// HeadMoved is the error of a conditional put (PutCheckpoint.ExpectHead)
// that found the newest live checkpoint of its namespace, head ("" for
// none), other than the one it expected.
func HeadMoved(threadID, ns, head, expected string) *Error {
	return Errorf(ECONFLICT, "The head of thread %s, namespace %q moved: it is %s, not %s; read the thread again before putting.",
		threadID, ns, headName(head), headName(expected))
}

// headName is a head for messages: "" is no checkpoint.
func headName(id string) string {
	if id == "" {
		return "no checkpoint"
	}
	return fmt.Sprintf("%q", id)
}

// CheckpointDeleted is the error of a write that a deletion's tombstone
// refuses (see tombstone.go): a put whose parent, or a put of a checkpoint,
// or put_writes against a checkpoint, that DeleteThread, DeleteForRuns or
// Prune removed within the tombstone lifetime. role says which ("the
// parent of this put"). Nothing was stored.
func CheckpointDeleted(ref CheckpointRef, role string) *Error {
	return Errorf(EGONE, "Checkpoint %q of thread %q, namespace %q (%s) was deleted; nothing was stored. To write to the thread again, start a fresh run on it (a config without checkpoint_id).",
		ref.ID, ref.ThreadID, ref.NS, role)
}

// Roles of CheckpointDeleted.
const (
	RoleParent      = "the parent of this put"
	RoleCheckpoint  = "the checkpoint of this put"
	RoleWritesOwner = "the checkpoint of these writes"
)

// StoredMetadataTooLarge is the error for a checkpoint whose stored metadata
// is past a limit a put now enforces (MetadataSize.Check): it was stored
// before, and a read refuses to decode it rather than take the memory.
func StoredMetadataTooLarge(ref CheckpointRef, z MetadataSize) *Error {
	msg := ErrorMessage(z.Check(fmt.Sprintf("The metadata of checkpoint %q in thread %q, namespace %q,", ref.ID, ref.ThreadID, ref.NS)))
	return Errorf(ETOOLARGE, "%s It was stored before that limit and is not read; delete the checkpoint or its thread.", msg)
}
