package embedded_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// pebbleStore makes a Pebble store of n checkpoints, closed, and returns its
// directory.
func pebbleStore(t *testing.T, n int) (string, saver.CheckpointRef) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "saver.db")
	s, err := embedded.Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ref := storetest.NewRef()
	for i := range n {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
		storetest.SetChannel(&in, "messages", fmt.Sprint(i), strings.Repeat("m", 1024))
		storetest.MustPutCheckpoint(t, s, in)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, ref
}

// TestOpenRefusesADamagedPebbleStore damages a Pebble store's directory
// the ways a lost disk or a bad copy would: each is refused at open, or
// its damaged data answers an error, never a crash or a silently empty
// store.
func TestOpenRefusesADamagedPebbleStore(t *testing.T) {
	files := func(dir, prefix string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
		return out
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"NoManifest", func(t *testing.T, dir string) {
			for _, f := range files(dir, "MANIFEST") {
				os.Remove(f)
			}
		}},
		{"GarbledManifest", func(t *testing.T, dir string) {
			for _, f := range files(dir, "MANIFEST") {
				if err := os.WriteFile(f, []byte(strings.Repeat("garbage", 100)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"EmptiedDirectory", func(t *testing.T, dir string) {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := pebbleStore(t, 20)
			tt.damage(t, dir)
			s, err := embedded.Open(dir, quiet)
			if err == nil {
				s.Close()
				t.Fatal("Open of a damaged store succeeded")
			}
			if !errors.Is(err, embedded.ErrNotStore) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open of a damaged store: %v; want ErrNotStore, naming the store", err)
			}
			t.Logf("%s: %v", tt.name, err)
		})
	}
}

// TestPebbleStoreReopens puts, closes and reopens: everything is there, and
// the store opens on Pebble whatever engine a new store would get.
func TestPebbleStoreReopens(t *testing.T) {
	dir, ref := pebbleStore(t, 50)
	s := MustOpen(t, dir, embedded.WithEngine(embedded.EngineBolt))
	got := storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID)
	if len(got) != 50 || len(got[0].Values) != 1 {
		t.Fatalf("reopened store lists %d checkpoints", len(got))
	}
}
