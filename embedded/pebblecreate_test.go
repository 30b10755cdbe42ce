package embedded

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

// TestCreateLeavesAnotherProcessesStore: Open looks for the store, then
// creates one where nothing was. Another process may create it in between;
// the creation that loses must leave that store alone. It used to fail on
// the other's lock and then remove the directory it took for its own
// half-made store, with everything the other had acknowledged in it.
func TestCreateLeavesAnotherProcessesStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saver.db")
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	first, err := Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	ref := saver.CheckpointRef{Tenant: "t", ThreadID: "th", ID: "c1"}
	if err := first.PutCheckpoint(t.Context(), saver.PutCheckpoint{Checkpoint: saver.Checkpoint{CheckpointRef: ref}}); err != nil {
		t.Fatal(err)
	}

	// The second creation, as if it had looked before the first was made.
	late := &Store{path: path, Logger: slog.New(slog.DiscardHandler), Timeout: 100 * time.Millisecond, ReserveBytes: DefaultReserveBytes, Now: time.Now}
	if err := late.openPebble(path, true); err == nil {
		late.Close()
		t.Fatal("a second open of a held store succeeded")
	}
	if _, err := first.GetTuple(t.Context(), ref); err != nil {
		t.Fatalf("the first store after the late creation: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path, quiet)
	if err != nil {
		t.Fatalf("reopening the first store: %v", err)
	}
	defer again.Close()
	if _, err := again.GetTuple(t.Context(), ref); err != nil {
		t.Fatalf("the first store's checkpoint after a restart: %v", err)
	}
}
