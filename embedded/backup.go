package embedded

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/bbolt"

	"github.com/saver-dev/saver"
)

// Online backup. Backup writes a consistent copy of the store, taken while
// it serves, as a tar stream: the files of the store, then a manifest
// (BackupManifestName) that names each file with its size and SHA-256, so
// that a reader can tell a whole copy from a stream cut short (a tar cut
// between two files reads as a shorter, valid tar).
//
// On Pebble the copy is a checkpoint (DB.Checkpoint) in a temporary folder
// beside the store: its tables are hard links, as they never change once
// written, and its log and manifest are copied; writers wait for nothing but
// the log's flush. The folder is removed once streamed, or when the stream
// fails; one left by a process that died meanwhile is removed when the
// store opens next. While it exists, its links keep the tables that
// compactions replace meanwhile on disk.
//
// On bbolt the copy is the file as one read transaction sees it
// (Tx.WriteTo), streamed straight out: no temporary file, but a write that
// needs the file's map to grow waits for the stream to end (the map starts
// at 1 GiB, see Open).
//
// One backup runs at a time: a second gets ECONFLICT.

// BackupManifestName is the last entry of a backup's tar stream.
const BackupManifestName = "saver-backup.json"

// BoltBackupName is the name of a bbolt store's file in its backup.
const BoltBackupName = "saver.db"

// BackupManifest describes a backup: what Backup writes last.
type BackupManifest struct {
	Engine  string       `json:"engine"`
	Created time.Time    `json:"created"`
	Files   []BackupFile `json:"files"`
}

// BackupFile is one file of a backup.
type BackupFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// errBackupRunning answers a backup asked for while one runs.
var errBackupRunning = saver.Errorf(saver.ECONFLICT, "A backup of this store is already running; one runs at a time. Retry once it is done.")

// Backup writes a consistent copy of the store to w as a tar stream (see
// above). Nothing is written to w before the copy is taken, so an error
// returned before then (ECONFLICT: a backup runs; EUNAVAILABLE: no disk for
// the checkpoint, or the store is closed) can still be answered as such.
func (s *Store) Backup(ctx context.Context, w io.Writer) error {
	if !s.backingUp.CompareAndSwap(false, true) {
		return errBackupRunning
	}
	defer s.backingUp.Store(false)
	if err := ctx.Err(); err != nil {
		return translate("backup", err)
	}
	bw := &backupWriter{tw: tar.NewWriter(w), m: BackupManifest{Engine: s.db.Name(), Created: time.Now().UTC()}}
	var err error
	switch e := s.db.(type) {
	case *pebbleEngine:
		err = e.backup(ctx, s.path, bw)
	case *boltEngine:
		err = e.backup(bw)
	default:
		err = fmt.Errorf("the %s engine has no backup", s.db.Name())
	}
	if err == nil {
		err = bw.close()
	}
	s.noteDamage(err)
	return translate("backup", err)
}

// backupPrefix begins the name of a Pebble store's temporary checkpoint
// folder, beside the store.
func backupPrefix(path string) string { return "." + filepath.Base(path) + ".backup-" }

// backup checkpoints the store into a temporary folder beside it and
// streams the folder's files.
func (e *pebbleEngine) backup(ctx context.Context, path string, bw *backupWriter) error {
	tmp, err := e.checkpoint(path)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "store")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !ent.Type().IsRegular() {
			return fmt.Errorf("checkpoint %s: %s is not a regular file", dir, ent.Name())
		}
		if err := bw.addFile(filepath.Join(dir, ent.Name()), ent.Name()); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint makes the checkpoint, in the folder "store" of a new temporary
// folder beside the store (Pebble makes the folder itself), and returns the
// temporary folder. The disk must hold what the checkpoint copies (the log
// and the manifest; the tables too when the folder is on another file
// system, where they cannot be linked) and keep the store's reserve.
func (e *pebbleEngine) checkpoint(path string) (string, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return "", errClosed
	}
	parent := filepath.Dir(path)
	need, err := checkpointBytes(e.db, path, parent)
	if err != nil {
		return "", err
	}
	free, err := freeBytes(parent)
	if err != nil {
		return "", err
	}
	if free < e.reserve+need {
		return "", saver.Errorf(saver.EUNAVAILABLE, "No room for the backup's checkpoint: %d bytes free, under the %d it needs "+
			"beside the %d the store keeps in reserve. Free some space, then retry.", free, need, e.reserve)
	}
	tmp, err := os.MkdirTemp(parent, backupPrefix(path))
	if err != nil {
		return "", err
	}
	if err := e.db.Checkpoint(filepath.Join(tmp, "store"), pebble.WithFlushedWAL()); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return tmp, nil
}

// checkpointBytes estimates what a checkpoint of the store at path costs the
// disk at parent: the files it copies, which are all but the tables when
// parent is the store's file system.
func checkpointBytes(db *pebble.DB, path, parent string) (uint64, error) {
	var st, pt syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	if err := syscall.Stat(parent, &pt); err != nil {
		return 0, err
	}
	m := db.Metrics()
	if st.Dev != pt.Dev {
		return m.DiskSpaceUsage(), nil
	}
	var n uint64
	entries, err := os.ReadDir(path)
	if err != nil {
		return 0, err
	}
	for _, ent := range entries {
		if filepath.Ext(ent.Name()) == ".sst" || filepath.Ext(ent.Name()) == ".blob" {
			continue
		}
		if fi, err := ent.Info(); err == nil && fi.Mode().IsRegular() {
			n += uint64(fi.Size())
		}
	}
	return n, nil
}

// removeBackupLeftovers removes the checkpoint folders a backup left beside
// the store at path when its process died; the store's lock, held by the
// caller, says no backup of it runs.
func removeBackupLeftovers(path string) error {
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), backupPrefix(path)+"*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range left {
		errs = append(errs, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}

// backup streams the bbolt file as one read transaction sees it.
func (e *boltEngine) backup(bw *backupWriter) error {
	return e.db.View(func(tx *bbolt.Tx) error {
		return bw.add(BoltBackupName, tx.Size(), func(w io.Writer) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
}

// backupWriter writes a backup's tar stream and keeps its manifest.
type backupWriter struct {
	tw *tar.Writer
	m  BackupManifest
}

// addFile adds the file at path under name.
func (b *backupWriter) addFile(path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return b.add(name, fi.Size(), func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// add adds a file of size bytes under name, whose bytes write gives.
func (b *backupWriter) add(name string, size int64, write func(io.Writer) error) error {
	if err := b.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: b.m.Created, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	h := sha256.New()
	if err := write(io.MultiWriter(b.tw, h)); err != nil {
		return err
	}
	b.m.Files = append(b.m.Files, BackupFile{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// close writes the manifest and ends the stream.
func (b *backupWriter) close() error {
	j, err := json.MarshalIndent(b.m, "", "  ")
	if err != nil {
		return err
	}
	if err := b.tw.WriteHeader(&tar.Header{Name: BackupManifestName, Mode: 0o600, Size: int64(len(j)), ModTime: b.m.Created, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := b.tw.Write(j); err != nil {
		return err
	}
	return b.tw.Close()
}

// ReadBackup reads a backup's tar stream from r into the empty directory
// dir, and checks every file against the manifest: a stream
// that ends before its manifest, or a file whose size or SHA-256 differs,
// is refused. Each file is synced, and dir too; dir is left behind on an
// error, for the caller to remove. It returns the manifest.
func ReadBackup(r io.Reader, dir string) (*BackupManifest, error) {
	tr := tar.NewReader(r)
	got := map[string]BackupFile{}
	var m *BackupManifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read backup: %w", err)
		}
		if m != nil {
			return nil, fmt.Errorf("read backup: %s after the manifest", hdr.Name)
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Name != filepath.Base(hdr.Name) || hdr.Name == "." || hdr.Name == ".." {
			return nil, fmt.Errorf("read backup: entry %q is not a plain file name", hdr.Name)
		}
		if hdr.Name == BackupManifestName {
			m = &BackupManifest{}
			if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(m); err != nil {
				return nil, fmt.Errorf("read backup: manifest: %w", err)
			}
			continue
		}
		if _, dup := got[hdr.Name]; dup {
			return nil, fmt.Errorf("read backup: %s twice", hdr.Name)
		}
		f, err := writeBackupFile(filepath.Join(dir, hdr.Name), tr, sha256.New())
		if err != nil {
			return nil, fmt.Errorf("read backup: %s: %w", hdr.Name, err)
		}
		f.Name = hdr.Name
		got[hdr.Name] = f
	}
	if m == nil {
		return nil, errors.New("read backup: the stream ended before its manifest: the backup is incomplete (the service's log says why)")
	}
	if len(m.Files) != len(got) {
		return nil, fmt.Errorf("read backup: the manifest lists %d files, the stream held %d", len(m.Files), len(got))
	}
	for _, want := range m.Files {
		if f, ok := got[want.Name]; !ok || f != want {
			return nil, fmt.Errorf("read backup: %s differs from the manifest (%d bytes, sha256 %s; want %d, %s)",
				want.Name, f.Size, f.SHA256, want.Size, want.SHA256)
		}
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return m, nil
}

// writeBackupFile writes r to a new file at path, synced, and returns its
// size and hash.
func writeBackupFile(path string, r io.Reader, h hash.Hash) (BackupFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return BackupFile{}, err
	}
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return BackupFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

// Verify reads every key and value of every bucket, so that the engine
// checks what it can of each (Pebble, the checksum of every block), and
// returns the number of keys: what a restore runs on a copy before putting
// it in place.
func (s *Store) Verify(ctx context.Context) (int, error) {
	n := 0
	err := s.view(ctx, "verify", func(tx kvTx) error {
		for _, name := range buckets {
			b := tx.Bucket(name)
			if b == nil {
				return fmt.Errorf("bucket %s is missing", name)
			}
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if err := checkCtx(ctx, n); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	return n, err
}
