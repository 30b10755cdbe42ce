package embedded

import (
	"fmt"
	"path/filepath"

	"go.etcd.io/bbolt"
)

// The bbolt engine: stores made before the embedded store moved to Pebble
// keep opening on it (bboltopen.go checks and opens the file, bboltverify.go
// verifies its pages first) until `saver migrate` moves them (migrate.go).
// Its commits sync twice, its pages then its meta page.

// initialMmapSize is the address space bbolt maps the file in at first.
const initialMmapSize = 1 << 30

// boltEngine is bbolt under the API.
type boltEngine struct{ db *bbolt.DB }

func (e *boltEngine) View(fn func(kvTx) error) error {
	return e.db.View(func(tx *bbolt.Tx) error { return fn(boltTx{tx}) })
}

func (e *boltEngine) Update(fn func(kvTx) error) error {
	return e.db.Update(func(tx *bbolt.Tx) error { return fn(boltTx{tx}) })
}

func (e *boltEngine) Close() error { return e.db.Close() }
func (e *boltEngine) Name() string { return "bbolt" }

type boltTx struct{ tx *bbolt.Tx }

func (t boltTx) Bucket(name []byte) kvBucket {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil
	}
	return boltBucket{b}
}

type boltBucket struct{ b *bbolt.Bucket }

func (b boltBucket) Get(k []byte) []byte   { return b.b.Get(k) }
func (b boltBucket) Put(k, v []byte) error { return b.b.Put(k, v) }
func (b boltBucket) Delete(k []byte) error { return b.b.Delete(k) }
func (b boltBucket) Cursor() kvCursor      { return b.b.Cursor() }

// openBolt opens (or creates) the bbolt file at path.
func (s *Store) openBolt(path string) error {
	create, err := s.checkFile(path)
	if err != nil {
		return err
	}
	// The freelist is not written at each commit (bbolt rebuilds it from the
	// pages when it opens the file, as etcd has it): a commit writes fewer
	// pages, about 7% faster a put (BenchmarkPutCheckpoint), and durability
	// is unchanged, as the freelist is derived data.
	//
	// The map starts at 1 GiB of address space (no memory until touched): a
	// write that has to grow the map waits for every read transaction open,
	// so a long read (a listing, delete_for_runs's search) would hold up
	// every tenant's puts. Below that size the file never needs it.
	of := openFiles{create: create}
	db, err := bbolt.Open(path, s.FileMode, &bbolt.Options{
		Timeout: s.Timeout, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType, OpenFile: of.open,
		InitialMmapSize: initialMmapSize,
	})
	if err != nil {
		of.undo(path)
		return openError(path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range buckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && of.created {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		db.Close()
		of.undo(path)
		return fmt.Errorf("embedded: create buckets in %s: %w", path, err)
	}
	s.db = &boltEngine{db}
	if !create {
		s.Logger.Warn("this store is a bbolt file, whose commits sync twice; `saver migrate` moves it to Pebble (one sync a commit)", "path", path)
	}
	s.Logger.Info("store opened", "path", path, "engine", s.db.Name(), "created", of.created)
	return nil
}
