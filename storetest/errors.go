package storetest

import (
	"testing"

	"github.com/saver-dev/saver"
)

var errorTests = []test{
	{"NotFound", testErrorsNotFound},
}

// MustError fails unless err carries want's code and message: the errors
// the root package words once, which every store returns alike.
func MustError(tb testing.TB, what string, err error, want *saver.Error) {
	tb.Helper()
	if got := (saver.Error{Code: saver.ErrorCode(err), Message: saver.ErrorMessage(err)}); got != *want {
		tb.Fatalf("%s: error %q %q (%v), want %q %q", what, got.Code, got.Message, err, want.Code, want.Message)
	}
}

// testErrorsNotFound checks that what is missing is reported in the root's
// words: a checkpoint by id, the latest of an empty namespace, and a thread
// with no checkpoint to copy.
func testErrorsNotFound(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, NewCheckpoint(ref, "0001"))
	for _, r := range []saver.CheckpointRef{At(ref, "0002"), At(InNS(ref, "child:1"), "0001"), InNS(ref, "child:1")} {
		_, err := s.GetTuple(t.Context(), r)
		MustError(t, "GetTuple", err, saver.CheckpointNotFound(r))
	}
	empty := NewRef()
	_, err := s.GetTuple(t.Context(), empty)
	MustError(t, "GetTuple(latest of a new thread)", err, saver.NoCheckpoint(empty.ThreadID, ""))
	err = s.CopyThread(t.Context(), empty.Tenant, empty.ThreadID, "copy-"+empty.ThreadID)
	MustError(t, "CopyThread(a new thread)", err, saver.ThreadNotFound(empty.ThreadID))
}
