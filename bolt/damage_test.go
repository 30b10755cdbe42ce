package bolt_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
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
	damageTables(t, path)

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

// damageTables flips bytes in the middle of every table (*.sst) of the
// Pebble store at path: in its data blocks, whose checksums Pebble checks
// as it reads them.
func damageTables(t *testing.T, path string) {
	t.Helper()
	tables, _ := filepath.Glob(filepath.Join(path, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("the store has no table to damage")
	}
	for _, name := range tables {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(b) / 4; i < len(b)/4+64; i++ {
			b[i] ^= 0xff
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
