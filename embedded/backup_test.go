package embedded_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// TestBackupRoundTrip backs up a store of each engine while it is open, reads
// the stream back into a folder, and opens the copy where it lies: it holds
// every checkpoint put before the backup, none put after, and Verify reads
// all its keys.
func TestBackupRoundTrip(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "saver.db")
			s := MustOpen(t, path, embedded.WithEngine(engine))
			ref := storetest.NewRef()
			for i := range 50 {
				storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i)))
			}
			keys, err := s.Verify(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var stream bytes.Buffer
			if err := s.Backup(t.Context(), &stream); err != nil {
				t.Fatal(err)
			}
			storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, "after"))

			dir := t.TempDir()
			m, err := embedded.ReadBackup(&stream, dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Engine != engine || len(m.Files) == 0 {
				t.Fatalf("manifest %+v", m)
			}
			copyPath := dir
			if engine == embedded.EngineBolt {
				copyPath = filepath.Join(dir, embedded.BoltBackupName)
			}
			c := MustOpen(t, copyPath)
			for i := range 50 {
				r := ref
				r.ID = fmt.Sprintf("%08d", i)
				if _, err := c.GetTuple(t.Context(), r); err != nil {
					t.Fatalf("checkpoint %s in the copy: %v", r.ID, err)
				}
			}
			r := ref
			r.ID = "after"
			if _, err := c.GetTuple(t.Context(), r); saver.ErrorCode(err) != saver.ENOTFOUND {
				t.Fatalf("a checkpoint put after the backup is in it: %v", err)
			}
			if n, err := c.Verify(t.Context()); err != nil || n != keys {
				t.Fatalf("Verify = %d, %v; want the %d keys the store had when backed up", n, err, keys)
			}
		})
	}
}

// TestReadBackupRefusesAnIncompleteStream cuts a backup's stream and
// changes a byte: ReadBackup refuses each. A stream cut between two files
// is a valid, shorter tar, which only the manifest tells from a whole one.
func TestReadBackupRefusesAnIncompleteStream(t *testing.T) {
	s := MustOpen(t, filepath.Join(t.TempDir(), "saver.db"))
	storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(storetest.NewRef(), "1"))
	var stream bytes.Buffer
	if err := s.Backup(t.Context(), &stream); err != nil {
		t.Fatal(err)
	}
	whole := stream.Bytes()

	// The offset where the manifest's header starts: the end of the files.
	var files bytes.Buffer
	tw := tar.NewWriter(&files)
	tr := tar.NewReader(bytes.NewReader(whole))
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == embedded.BackupManifestName {
			break
		}
		tw.WriteHeader(hdr)
		io.Copy(tw, tr)
	}
	tw.Flush() // no end-of-archive blocks: the stream of a cut connection
	withoutManifest := files.Bytes()

	flipped := bytes.Clone(whole)
	flipped[512+4] ^= 0xff // in the first file's bytes, after its header

	tests := []struct {
		name   string
		stream []byte
		want   string
	}{
		{"CutBetweenFiles", withoutManifest, "ended before its manifest"},
		{"CutInAFile", whole[:700], "unexpected EOF"},
		{"ByteChanged", flipped, "differs from the manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := embedded.ReadBackup(bytes.NewReader(tt.stream), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want %q", err, tt.want)
			}
		})
	}
}

// TestBackupOneAtATime holds a backup on a writer that takes nothing: a
// second gets ECONFLICT, and once the first fails (its reader gone) its
// checkpoint folder beside the store is removed and a backup runs again.
func TestBackupOneAtATime(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "saver.db")
	s := MustOpen(t, path)
	storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(storetest.NewRef(), "1"))

	r, w := io.Pipe()
	first := make(chan error, 1)
	go func() { first <- s.Backup(context.Background(), w) }()
	// The first write blocks once the checkpoint is made: wait for it.
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, path); len(left) != 1 {
		t.Fatalf("checkpoint folders during the backup: %v", left)
	}
	err := s.Backup(t.Context(), io.Discard)
	storetest.MustError(t, "a second backup", err, saver.Errorf(saver.ECONFLICT,
		"A backup of this store is already running; one runs at a time. Retry once it is done."))

	r.CloseWithError(errors.New("the caller went away"))
	if err := <-first; err == nil || !strings.Contains(err.Error(), "the caller went away") {
		t.Fatalf("the first backup: %v", err)
	}
	if left := leftovers(t, path); len(left) != 0 {
		t.Fatalf("checkpoint folders left after a failed backup: %v", left)
	}
	if err := s.Backup(t.Context(), io.Discard); err != nil {
		t.Fatalf("a backup after the failed one: %v", err)
	}
}

// TestOpenRemovesABackupsLeftovers: a checkpoint folder left beside the
// store by a process that died during a backup is removed when the store
// opens next, so that its links hold no tables on the disk.
func TestOpenRemovesABackupsLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "saver.db")
	s := MustOpen(t, path)
	s.Close()
	left := filepath.Join(dir, ".saver.db.backup-123", "store")
	if err := os.MkdirAll(left, 0o750); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, ".other.db.backup-123")
	if err := os.Mkdir(other, 0o750); err != nil {
		t.Fatal(err)
	}
	MustOpen(t, path)
	if got := leftovers(t, path); len(got) != 0 {
		t.Fatalf("left after Open: %v", got)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another store's folder was removed: %v", err)
	}
}

func leftovers(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".saver.db.backup-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
