package bolt

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/saver-dev/saver"
)

// TestWALFilled checks that the store's log starts at its full length, that
// commits write within it (so that their syncs leave its size alone), and
// that a store opened again reads every commit back, the zeros after them
// taken for the log's end.
func TestWALFilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saver.db")
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	s, err := Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	const puts = 50
	for i := range puts {
		op := saver.PutOp{Namespace: saver.Namespace{"n"}, Key: fmt.Sprint(i), Value: []byte(fmt.Sprintf(`{"i": %d}`, i))}
		if _, err := s.Batch(t.Context(), "t", []saver.ItemOp{op}); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := filepath.Glob(filepath.Join(path, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no log in the store (%v)", err)
	}
	want := int64(pebbleMemTable + pebbleMemTable/10)
	for _, l := range logs {
		fi, err := os.Stat(l)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != want {
			t.Errorf("%s is %d bytes after %d commits, want the %d it was filled to", filepath.Base(l), fi.Size(), puts, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i := range puts {
		res, err := s.Batch(t.Context(), "t", []saver.ItemOp{saver.GetOp{Namespace: saver.Namespace{"n"}, Key: fmt.Sprint(i)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Item == nil || string(res[0].Item.Value) != fmt.Sprintf(`{"i": %d}`, i) {
			t.Fatalf("item %d read back as %+v", i, res)
		}
	}
}
