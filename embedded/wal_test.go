package embedded

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
)

// TestWALEstimate checks that the live log bytes roomFor takes follow
// Pebble's own figure without reading it at each commit: as commits add to
// the log, at least Pebble's figure and over it by no more than the log
// records' headers; and after a flush, which empties the log, Pebble's
// figure again rather than what it was.
func TestWALEstimate(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "saver.db"), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := s.db.(*pebbleEngine)
	value := []byte(`{"text": "` + strings.Repeat("x", 2000) + `"}`)
	const puts = 300
	for i := range puts {
		op := saver.PutOp{Namespace: saver.Namespace{"n"}, Key: fmt.Sprint(i), Value: value}
		if _, err := s.Batch(t.Context(), "t", []saver.ItemOp{op}); err != nil {
			t.Fatal(err)
		}
	}
	got, want := e.wal.bytes(e.db), e.db.Metrics().WAL.Size
	if got < want || got > want+puts*64 {
		t.Fatalf("after %d puts the estimate is %d bytes, Pebble's figure %d", puts, got, want)
	}
	before := got
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	got, want = e.wal.bytes(e.db), e.db.Metrics().WAL.Size
	if got != want || got >= before {
		t.Fatalf("after a flush the estimate is %d bytes, Pebble's figure %d (%d before it)", got, want, before)
	}
}

// TestWALEstimateWhileFlushing puts while flushes end: Pebble calls the
// estimate's shrank with its own mutex held, which Metrics takes, so an
// estimate that held its lock across Metrics deadlocked a commit against a
// flush's end (seen once in about forty runs of TestDiskFullAfterADeletion;
// here within a few hundred rounds). Hanging, this test fails by the test
// binary's timeout.
func TestWALEstimateWhileFlushing(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "saver.db"), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	value := []byte(`{"text": "` + strings.Repeat("x", 2000) + `"}`)
	stop := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				flushed <- nil
				return
			default:
			}
			if err := s.Flush(); err != nil {
				flushed <- err
				return
			}
		}
	}()
	for i := range 2000 {
		op := saver.PutOp{Namespace: saver.Namespace{"n"}, Key: fmt.Sprint(i), Value: value}
		if _, err := s.Batch(t.Context(), "t", []saver.ItemOp{op}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
}
