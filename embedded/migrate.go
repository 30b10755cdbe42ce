package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/bbolt"
)

// migrateBatch bounds the bytes of one batch of a migration.
const migrateBatch = 4 << 20

// Migrate moves the bbolt store at path to Pebble in place: it copies every
// bucket's keys and values into a new Pebble store beside it, syncs it,
// checks that it holds as many keys as the file, and then swaps them, the
// file kept as path + ".bbolt" (delete it once the new store serves). No
// service may have the store open. Run again after an interruption, it
// starts over (a half-made copy is removed first) or, if the swap was cut
// short, finishes it. It returns the number of keys copied.
func Migrate(ctx context.Context, path string, logger *slog.Logger) (int, error) {
	if logger == nil {
		logger = slog.Default()
	}
	tmp, backup := path+".migrating", path+".bbolt"
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, berr := os.Stat(backup); berr == nil {
			if _, terr := os.Stat(tmp); terr == nil {
				// Cut short between the two renames: finish.
				if err := os.Rename(tmp, path); err != nil {
					return 0, fmt.Errorf("embedded: migrate %s: %w", path, err)
				}
				if err := syncDir(filepath.Dir(path)); err != nil {
					return 0, fmt.Errorf("embedded: migrate %s: %w", path, err)
				}
				logger.Info("store migration finished: an earlier run had copied it", "path", path, "old file", backup)
				return 0, nil
			}
		}
		return 0, fmt.Errorf("embedded: migrate %s: no store there", path)
	case err != nil:
		return 0, fmt.Errorf("embedded: migrate %s: %w", path, err)
	case fi.IsDir():
		return 0, fmt.Errorf("embedded: migrate %s: it is a Pebble store already", path)
	}
	if _, err := os.Stat(backup); err == nil {
		return 0, fmt.Errorf("embedded: migrate %s: %s is there from an earlier migration: move it aside first", path, backup)
	}
	if err := os.RemoveAll(tmp); err != nil {
		return 0, fmt.Errorf("embedded: migrate %s: %w", path, err)
	}
	src, err := Open(path, WithLogger(logger))
	if err != nil {
		return 0, err
	}
	be, ok := src.db.(*boltEngine)
	if !ok {
		src.Close()
		return 0, fmt.Errorf("embedded: migrate %s: not a bbolt file", path)
	}
	n, err := copyToPebble(ctx, be.db, tmp, logger)
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(tmp)
		return 0, fmt.Errorf("embedded: migrate %s: %w", path, err)
	}
	if err := os.Rename(path, backup); err != nil {
		os.RemoveAll(tmp)
		return 0, fmt.Errorf("embedded: migrate %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("embedded: migrate %s: the file is at %s; rename %s to %s to finish: %w", path, backup, tmp, path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return 0, fmt.Errorf("embedded: migrate %s: %w", path, err)
	}
	logger.Info("store migrated to pebble", "path", path, "keys", n, "old file", backup)
	return n, nil
}

// copyToPebble copies every bucket of db into a new Pebble store at dir and
// checks the copy's key count against the file's.
func copyToPebble(ctx context.Context, db *bbolt.DB, dir string, logger *slog.Logger) (int, error) {
	dst, err := pebble.Open(dir, pebbleOptions(logger, dir, true))
	if err != nil {
		return 0, err
	}
	n := 0
	err = db.View(func(tx *bbolt.Tx) error {
		batch := dst.NewBatch()
		for _, name := range buckets {
			b := tx.Bucket(name)
			if b == nil {
				continue
			}
			prefix := pebblePrefixes[string(name)]
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if n%4096 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if err := batch.Set(append([]byte{prefix}, k...), v, nil); err != nil {
					return err
				}
				n++
				if batch.Len() >= migrateBatch {
					if err := batch.Commit(pebble.NoSync); err != nil {
						return err
					}
					batch = dst.NewBatch()
				}
			}
		}
		return batch.Commit(pebble.Sync)
	})
	if err == nil {
		err = dst.Flush()
	}
	if err == nil {
		var copied int
		copied, err = countPebbleKeys(dst)
		if err == nil && copied != n {
			err = fmt.Errorf("the copy holds %d keys, the file %d", copied, n)
		}
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func countPebbleKeys(db *pebble.DB) (int, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		it.Close()
		return 0, err
	}
	return n, it.Close()
}
