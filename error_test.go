package saver_test

import (
	"testing"

	"github.com/saver-dev/saver"
)

func TestStoreErrors(t *testing.T) {
	ref := saver.CheckpointRef{Tenant: "t", ThreadID: "th\n1", NS: "child:1", ID: "0001"}
	latest := ref
	latest.ID = ""
	for _, tt := range []struct {
		name      string
		err       *saver.Error
		code, msg string
	}{
		{"NoCheckpoint", saver.NoCheckpoint("th\n1", ""), saver.ENOTFOUND, `Thread "th\n1" has no checkpoint in namespace "".`},
		{"CheckpointNotFound", saver.CheckpointNotFound(ref), saver.ENOTFOUND, `Checkpoint "0001" not found in thread "th\n1", namespace "child:1".`},
		{"LatestNotFound", saver.CheckpointNotFound(latest), saver.ENOTFOUND, `Thread "th\n1" has no checkpoint in namespace "child:1".`},
		{"ThreadNotFound", saver.ThreadNotFound("th\n1"), saver.ENOTFOUND, `Thread "th\n1" has no checkpoint.`},
		{"HeadMoved", saver.HeadMoved("t1", "", "0002", "0001"), saver.ECONFLICT,
			`The head of thread t1, namespace "" moved: it is "0002", not "0001"; read the thread again before putting.`},
		{"HeadMovedFromNone", saver.HeadMoved("t1", "", "0002", ""), saver.ECONFLICT,
			`The head of thread t1, namespace "" moved: it is "0002", not no checkpoint; read the thread again before putting.`},
		{"HeadMovedToNone", saver.HeadMoved("t1", "", "", "0001"), saver.ECONFLICT,
			`The head of thread t1, namespace "" moved: it is no checkpoint, not "0001"; read the thread again before putting.`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := saver.ErrorCode(tt.err), tt.code; got != want {
				t.Errorf("code = %q, want %q", got, want)
			}
			if got, want := saver.ErrorMessage(tt.err), tt.msg; got != want {
				t.Errorf("message = %q, want %q", got, want)
			}
		})
	}
}
