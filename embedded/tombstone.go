package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

// bucketTombstones holds a tombstone for every checkpoint a deletion
// removed (see saver's tombstone.go), under the checkpoint's own key
// (tenant, thread, ns, id). It is no thread bucket: no deletion, copy or
// prune of a thread touches it, and Sweep removes its expired records.
var bucketTombstones = []byte("tombstones")

// tombstoneRecord is a tombstone's value. Expiry comes first, as in every
// record (see recordExpiry).
type tombstoneRecord struct {
	ExpiresAt int64 `msgpack:"expires_at"`
	DeletedAt int64 `msgpack:"deleted_at"`
}

// tombstone returns the record of a tombstone laid now. Every tombstone
// is made here, so this is where the store learns that it may hold one,
// before the transaction that lays it runs.
func (s *Store) tombstone() ([]byte, error) {
	s.stones.Store(true)
	now := s.Now()
	v, err := msgpack.Marshal(&tombstoneRecord{ExpiresAt: now.Add(s.TombstoneLifetime).Unix(), DeletedAt: now.Unix()})
	if err != nil {
		return nil, fmt.Errorf("encode tombstone: %w", err)
	}
	return v, nil
}

// findStones sets s.stones if the store holds a tombstone, live or not.
func (s *Store) findStones() error {
	return s.db.View(func(tx kvTx) error {
		k, _ := tx.Bucket(bucketTombstones).Cursor().First()
		s.stones.Store(k != nil)
		return nil
	})
}

// mayBeBuried is buried for a write: a store that holds no tombstone
// (most never delete, or not since they opened) skips the lookup, a tenth
// of a put's CPU in a profile (BenchmarkPutCheckpoint). s.stones is set
// before any tombstone is laid, and cleared only by an Open that finds none
// (a Sweep that removes the last leaves it set, the safe side).
func (s *Store) mayBeBuried(tx kvTx, ck []byte, now time.Time) (bool, error) {
	if !s.stones.Load() {
		return false, nil
	}
	return buried(tx, ck, now)
}

// buried reports whether the checkpoint whose key is ck has a live
// tombstone.
func buried(tx kvTx, ck []byte, now time.Time) (bool, error) {
	v, err := getLive(tx.Bucket(bucketTombstones), ck, now)
	return v != nil, err
}

// refusePut returns the error of a put that a tombstone refuses (its
// parent's or its own), nil when none does.
func (s *Store) refusePut(tx kvTx, in *saver.PutCheckpoint, now time.Time) (error, error) {
	if in.ParentID != "" {
		parent := in.CheckpointRef
		parent.ID = in.ParentID
		if ok, err := s.mayBeBuried(tx, checkpointKey(parent), now); ok || err != nil {
			return refused(ok, parent, saver.RoleParent), err
		}
	}
	ok, err := s.mayBeBuried(tx, checkpointKey(in.CheckpointRef), now)
	return refused(ok, in.CheckpointRef, saver.RoleCheckpoint), err
}

// refused is CheckpointDeleted when ok, nil otherwise.
func refused(ok bool, ref saver.CheckpointRef, role string) error {
	if !ok {
		return nil
	}
	return saver.CheckpointDeleted(ref, role)
}

// maxStragglerPasses bounds the passes of buryStragglers: a writer that
// puts a step in every pass's window, between its read and its tombstones,
// keeps it going, and the deletion answers EUNAVAILABLE after so many
// (its tombstones stay; a retry finishes it).
const maxStragglerPasses = 64

// buryStragglers deletes, with their writes, and tombstones the
// checkpoints under prefix (a thread's, or a namespace's) that descend from
// a tombstoned checkpoint, pass after pass until a pass finds none. They
// are the puts that raced a deletion: each passed its check before its
// parent was tombstoned, and landed where the deletion had already been.
// Each pass reads the checkpoints, takes those whose parent has a
// tombstone and, in memory, their descendants, and deletes them; a put
// after a pass finds its parent tombstoned and is refused, so the passes
// end. DeleteForRuns passes the runs it deletes and the checkpoints there
// were when it began (present): it keeps another run's checkpoint whose
// parent it deletes, so only a checkpoint of one of runs, or one that came
// during the deletion, is a straggler.
func (s *Store) buryStragglers(ctx context.Context, op string, prefix []byte, runs, present map[string]bool) error {
	for pass := 0; ; pass++ {
		if pass == maxStragglerPasses {
			return saver.Errorf(saver.EUNAVAILABLE, "The deletion raced puts continuing what it deletes for %d passes; its tombstones hold, retry it.", pass)
		}
		var doomed map[string]bool
		err := s.view(ctx, op, func(tx kvTx) error {
			var err error
			doomed, err = stragglers(ctx, tx, prefix, runs, present, s.Now())
			return err
		})
		if err != nil || len(doomed) == 0 {
			return err
		}
		err = s.buryWhere(ctx, op, prefix, func(_ kvTx, rest, _ []byte) (bool, error) {
			return doomed[string(prefix)+string(rest)], nil
		})
		if err != nil {
			return err
		}
	}
}

// stragglers returns the keys of the checkpoints under prefix that have a
// tombstoned ancestor through checkpoints that are stored, but for those
// present and of no run in runs (see buryStragglers).
func stragglers(ctx context.Context, tx kvTx, prefix []byte, runs, present map[string]bool, now time.Time) (map[string]bool, error) {
	parents := map[string]string{} // key -> its parent's key
	err := scanPrefix(ctx, tx.Bucket(bucketCheckpoints), prefix, func(k, v []byte) error {
		var node saver.Node
		if _, err := decodeNode(&node, v); err != nil || node.ParentID == "" {
			return err
		}
		parts, err := parseKey(k, 4)
		if err != nil {
			return err
		}
		if present[parts[3]] {
			run, _, err := recordRunID(v)
			if err != nil || !runs[run] {
				return err
			}
		}
		parents[string(k)] = string(key(parts[0], parts[1], parts[2], node.ParentID))
		return nil
	})
	if err != nil {
		return nil, err
	}
	doomed := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for k, parent := range parents {
			if doomed[k] {
				continue
			}
			ok := doomed[parent]
			if !ok {
				if ok, err = buried(tx, []byte(parent), now); err != nil {
					return nil, err
				}
			}
			if ok {
				doomed[k], changed = true, true
			}
		}
	}
	return doomed, nil
}
