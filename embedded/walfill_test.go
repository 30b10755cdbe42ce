package embedded

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

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

// BenchmarkFreshStoreSync times synced 2 KB writes to a fresh Pebble store,
// its logs filled as the store makes them and, beside it, as Pebble makes
// them: `go test -run '^$' -bench FreshStoreSync -benchtime 1000x ./embedded/`.
// 1,000 writes stay within the first log, which Pebble could not recycle
// yet; p50-us is the median write.
func BenchmarkFreshStoreSync(b *testing.B) {
	for _, filled := range []bool{true, false} {
		name := map[bool]string{true: "filled", false: "pebble"}[filled]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			opts := &pebble.Options{MemTableSize: pebbleMemTable, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}}
			if filled {
				opts.FS = walFill{FS: vfs.Default, dir: filepath.Clean(dir), size: pebbleMemTable + pebbleMemTable/10}
			}
			db, err := pebble.Open(dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			value := make([]byte, 2048)
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := db.Set(fmt.Appendf(nil, "k%09d", i), value, pebble.Sync); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-us")
		})
	}
}
