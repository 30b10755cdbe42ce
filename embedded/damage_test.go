package embedded_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/faults/damage"
	"github.com/saver-dev/saver/storetest"
)

// TestDamagedTableMakesThePingFail damages a table of a Pebble store on
// disk and reads it: the read fails as an internal error, and from then on
// Ping reports the store damaged (EUNAVAILABLE), so that /readyz takes it
// out of rotation. Before, the read panicked (Pebble's Fatalf on damage)
// and Ping went on answering nil.
func TestDamagedTableMakesThePingFail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saver.db")
	s := MustOpen(t, path)
	ref := storetest.NewRef()
	in := storetest.NewCheckpoint(ref, "0001")
	storetest.SetChannel(&in, "messages", "1", strings.Repeat("m", 64<<10))
	storetest.MustPutCheckpoint(t, s, in)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	damage.PebbleTables(t, path)

	s = MustOpen(t, path)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping before any read met the damage: %v", err)
	}
	_, err := s.GetTuple(t.Context(), in.CheckpointRef)
	if got := saver.ErrorCode(err); got != saver.EINTERNAL {
		t.Fatalf("read of a damaged table: code %q (%v), want %q", got, err, saver.EINTERNAL)
	}
	for range 2 {
		err := s.Ping(t.Context())
		if got := saver.ErrorCode(err); got != saver.EUNAVAILABLE {
			t.Fatalf("Ping after a read met damage: code %q (%v), want %q", got, err, saver.EUNAVAILABLE)
		}
		if msg := saver.ErrorMessage(err); !strings.Contains(msg, "damaged") {
			t.Fatalf("Ping after a read met damage: %q", msg)
		}
	}
}
