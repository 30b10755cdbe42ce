package embedded_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

var quiet = embedded.WithLogger(slog.New(slog.DiscardHandler))

// onBolt makes a new store a bbolt file: these tests are about that file.
var onBolt = embedded.WithEngine(embedded.EngineBolt)

// storeFile returns the bytes of a closed store holding n checkpoints of
// ref's thread, each with a blob and a write, and its layout: the page size
// and the root page of the checkpoints bucket (a branch page when n is large
// enough).
func storeFile(tb testing.TB, n int) (data []byte, ref saver.CheckpointRef, pageSize int, root uint64) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "saver.db")
	s, err := embedded.Open(path, quiet, onBolt)
	if err != nil {
		tb.Fatal(err)
	}
	// Small stores are written by one writer, so that their bytes are the
	// same from run to run (FuzzOpen's inputs are offsets into them);
	// larger ones by parallel writers, which share commits: fewer fsyncs.
	ref = saver.CheckpointRef{Tenant: "tenant", ThreadID: "thread"}
	writers := 1
	if n > 40 {
		writers = 8
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
				in.Body = storetest.Typed(strings.Repeat("b", 1024))
				storetest.SetChannel(&in, "messages", fmt.Sprint(i), strings.Repeat("m", 256))
				storetest.MustPutCheckpoint(tb, s, in)
				storetest.MustPutWrites(tb, s, in.CheckpointRef, storetest.NewWrite("task", 0, "messages", "reply"))
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	db, err := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		root = uint64(tx.Bucket([]byte("checkpoints")).Root())
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data, ref, db.Info().PageSize, root
}

// foreignFile returns a bbolt file of another program: one bucket, not ours.
func foreignFile(t *testing.T) []byte {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("settings"))
		if err != nil {
			return err
		}
		return b.Put([]byte("theme"), []byte("dark"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOpenRefusesWhatIsNotAStore gives Open files that are not stores, as
// a lost disk, a copy cut off, bad sectors or a wrong path leave them: each
// must be refused with an error naming the file and saying what to do, and
// left byte for byte as it was. Before, an empty file became a new empty
// store (its data silently gone), and a cut or damaged one crashed the
// process with a stack dump inside bbolt.
func TestOpenRefusesWhatIsNotAStore(t *testing.T) {
	good, _, pageSize, root := storeFile(t, 80)
	if len(good) < 16*pageSize {
		t.Fatalf("the store is only %d bytes; the cases below need more pages", len(good))
	}
	hwm := binary.NativeEndian.Uint64(good[16+40:]) // meta 0's page count
	page := func(data []byte, id uint64) []byte { return data[int(id)*pageSize : int(id+1)*pageSize] }
	if flags := binary.NativeEndian.Uint16(page(good, root)[8:]); flags != 0x01 {
		t.Fatalf("the checkpoints bucket's root page %d has flags %#x, not a branch page", root, flags)
	}
	damaged := func(fn func(b []byte)) []byte {
		b := bytes.Clone(good)
		fn(b)
		return b
	}
	random := func(seed uint64, n int) []byte {
		b := make([]byte, n)
		r := rand.New(rand.NewPCG(seed, seed))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"Empty", []byte{}, "the file is empty (0 bytes)"},
		{"CutInHalf", good[:int(hwm)*pageSize/2], "it was cut short"}, // half the pages in use: the file grows ahead of them
		{"CutToOnePage", good[:pageSize], "shorter than its two meta pages"},
		{"Text", []byte("checkpoints\n"), "no valid bbolt meta page"},
		{"MetaPagesGarbled", damaged(func(b []byte) {
			copy(b[16:], random(1, 64))
			copy(b[pageSize+16:], random(2, 64))
		}), "no valid bbolt meta page"},
		{"RootPageGarbled", damaged(func(b []byte) { copy(page(b, root), random(3, pageSize)) }), "holds the header of page"},
		{"BranchPointsPastTheEnd", damaged(func(b []byte) {
			binary.NativeEndian.PutUint64(page(b, root)[16+8:], hwm+10)
		}), "outside pages 2 to"},
		{"BranchPointsAtItself", damaged(func(b []byte) {
			binary.NativeEndian.PutUint64(page(b, root)[16+8:], root)
		}), "is reached twice"},
		{"BranchKeyOutOfBounds", damaged(func(b []byte) {
			binary.NativeEndian.PutUint32(page(b, root)[16+4:], uint32(1<<20)) // ksize
		}), "an element reaches byte"},
		{"BranchKeyNotItsChildsFirstKey", damaged(func(b []byte) {
			// Still between its neighbours, so in order: bbolt would not
			// find the element again when it writes the child, and would
			// add a second one for the same page (a page used twice).
			e := page(b, root)[16+16:]
			pos, ksize := binary.NativeEndian.Uint32(e[0:]), binary.NativeEndian.Uint32(e[4:])
			key := e[pos : pos+ksize]
			key[len(key)-1]++ // the tuple's last separator: 0x00 -> 0x01
			key[len(key)-2]-- // its last digit
		}), "its first key is not the one"},
		{"BranchOfOneChild", damaged(func(b []byte) {
			binary.NativeEndian.PutUint16(page(b, root)[10:], 1)
		}), "has 1 children"},
		{"EmptyKey", damaged(func(b []byte) {
			binary.NativeEndian.PutUint32(page(b, root)[16+4:], 0)
		}), "key 0 is empty"},
		{"RootKeyNotABucket", damaged(func(b []byte) {
			// Every key of the root is one of the store's buckets; one that
			// is a plain value made Open fail inside bbolt instead.
			for _, meta := range []int{0, pageSize} {
				leaf := page(b, binary.NativeEndian.Uint64(b[meta+32:])) // the meta's root bucket
				for i := range int(binary.NativeEndian.Uint16(leaf[10:])) {
					e := leaf[16+16*i:]
					pos, ksize := binary.NativeEndian.Uint32(e[4:]), binary.NativeEndian.Uint32(e[8:])
					if string(e[pos:pos+ksize]) != "checkpoints" {
						binary.NativeEndian.PutUint32(e[0:], 0) // not a bucket
					}
				}
			}
		}), "is not a bucket"},
		{"ForeignBboltFile", foreignFile(t), "not a saver store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "saver.db")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := embedded.Open(path, quiet)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, embedded.ErrNotStore) {
				t.Errorf("error is not ErrNotStore: %v", err)
			}
			for _, want := range []string{path, tt.want, "not a valid store"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			if !strings.Contains(err.Error(), "restore") || !strings.Contains(err.Error(), "new, empty store") {
				t.Errorf("error does not say what to do: %v", err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, tt.data) {
				t.Errorf("Open changed the file: %d bytes before, %d after", len(tt.data), len(after))
			}
		})
	}
}

// TestOpenRefusesADirectory opens a directory that holds no store: a
// directory is where a Pebble store lives, but an empty one (or another
// program's) is refused as an empty file is, and left as it was.
func TestOpenRefusesADirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saver.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := embedded.Open(path, quiet)
	if !errors.Is(err, embedded.ErrNotStore) || !strings.Contains(err.Error(), "holds no store") {
		t.Fatalf("Open of a directory: %v", err)
	}
	if entries, _ := os.ReadDir(path); len(entries) != 1 {
		t.Fatalf("Open changed the directory: %v", entries)
	}
}

// TestOpenKeepsAStore reopens a store, whole and with a free page list
// written by an older release, and finds everything in it.
func TestOpenKeepsAStore(t *testing.T) {
	good, ref, _, _ := storeFile(t, 80)
	t.Run("Reopen", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "saver.db")
		if err := os.WriteFile(path, good, 0o600); err != nil {
			t.Fatal(err)
		}
		s := MustOpen(t, path)
		mustHoldThread(t, s, ref, 80)
	})
	t.Run("FreelistSynced", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "saver.db")
		if err := os.WriteFile(path, good, 0o600); err != nil {
			t.Fatal(err)
		}
		// A commit without NoFreelistSync writes the freelist page, as
		// releases before it was turned off did.
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("writes")).Put([]byte{0xff}, nil) }); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("writes")).Delete([]byte{0xff}) }); err != nil {
			t.Fatal(err)
		}
		db.Close()
		s := MustOpen(t, path)
		mustHoldThread(t, s, ref, 80)
	})
	t.Run("EmptyBboltFile", func(t *testing.T) {
		// A bbolt file with no bucket yet holds nobody's data: Open adopts
		// it, as it does a file a first start left before its buckets.
		path := filepath.Join(t.TempDir(), "saver.db")
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		s := MustOpen(t, path)
		storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, "1"))
	})
}

func mustHoldThread(t *testing.T, s *embedded.Store, ref saver.CheckpointRef, n int) {
	t.Helper()
	page, err := s.ListCheckpoints(t.Context(), saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != n {
		t.Fatalf("listed %d checkpoints, want %d", len(page), n)
	}
	latest := storetest.MustGetTuple(t, s, ref)
	if got, want := latest.ID, fmt.Sprintf("%08d", n-1); got != want {
		t.Fatalf("latest is %s, want %s", got, want)
	}
}

// FuzzOpen opens damaged copies of a store: Open must refuse them with
// ErrNotStore or open them, never crash, and what it opens must be
// readable through without a crash. The damage is the fuzzer's input, kept
// small so that it minimises fast: bytes written over the file at an
// offset, and where to cut the file short (0: not at all).
func FuzzOpen(f *testing.F) {
	good, ref, pageSize, root := storeFile(f, 20)
	f.Add(uint32(0), []byte{}, uint32(0))
	f.Add(uint32(0), []byte{}, uint32(len(good)/2))
	f.Add(uint32(int(root)*pageSize+16), []byte{0xff, 0xff, 0xff, 0xff}, uint32(0))
	f.Add(uint32(int(root)*pageSize+24), []byte{byte(root)}, uint32(0))
	f.Fuzz(func(t *testing.T, at uint32, patch []byte, cut uint32) {
		data := bytes.Clone(good)
		if i := int(at) % len(data); len(patch) > 0 {
			copy(data[i:], patch)
		}
		if cut != 0 {
			data = data[:int(cut)%len(data)]
		}
		path := filepath.Join(t.TempDir(), "saver.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := embedded.Open(path, quiet)
		if err != nil {
			if !errors.Is(err, embedded.ErrNotStore) {
				t.Fatalf("Open failed but not with ErrNotStore: %v", err)
			}
			return
		}
		defer s.Close()
		// Whatever Open accepts is walked through: listing decodes every
		// checkpoint of the thread, the sweep every record of the file.
		s.ListCheckpoints(t.Context(), saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID})
		s.Sweep(t.Context())
	})
}
