package bolt

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestWALFill checks that a new log is created full of zeros, with its
// first write at its start, and that other files are created empty.
func TestWALFill(t *testing.T) {
	const size = 600 << 10 // more than one WriteAt of zeros, not a multiple of it
	fs := walFillFS{FS: vfs.Default, size: size}
	for _, tc := range []struct {
		name string
		want int64 // size after a first write of 5 bytes
	}{
		{"000004.log", size},
		{"MANIFEST-000001", 5},
		{"000005.sst", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte("first")); err != nil {
				t.Fatal(err)
			}
			st, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != tc.want {
				t.Fatalf("size %d, want %d", st.Size(), tc.want)
			}
			got := make([]byte, st.Size())
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(got, []byte("first")) || bytes.ContainsFunc(got[5:], func(r rune) bool { return r != 0 }) {
				t.Fatalf("want the first write at the start and zeros after it, got %q...", got[:min(len(got), 16)])
			}
		})
	}
}
