package bolt

import (
	"bytes"
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

// tombstone returns the record of a tombstone laid now.
func (s *Store) tombstone() ([]byte, error) {
	now := s.Now()
	v, err := msgpack.Marshal(&tombstoneRecord{ExpiresAt: now.Add(s.TombstoneLifetime).Unix(), DeletedAt: now.Unix()})
	if err != nil {
		return nil, fmt.Errorf("encode tombstone: %w", err)
	}
	return v, nil
}

// buried reports whether the checkpoint whose key is ck has a live
// tombstone.
func buried(tx kvTx, ck []byte, now time.Time) (bool, error) {
	v, err := getLive(tx.Bucket(bucketTombstones), ck, now)
	return v != nil, err
}

// refusePut returns the error of a put that a tombstone refuses (its
// parent's or its own), nil when none does.
func refusePut(tx kvTx, in *saver.PutCheckpoint, now time.Time) (error, error) {
	if in.ParentID != "" {
		parent := in.CheckpointRef
		parent.ID = in.ParentID
		if ok, err := buried(tx, checkpointKey(parent), now); ok || err != nil {
			return refused(ok, parent, saver.RoleParent), err
		}
	}
	ok, err := buried(tx, checkpointKey(in.CheckpointRef), now)
	return refused(ok, in.CheckpointRef, saver.RoleCheckpoint), err
}

// refused is CheckpointDeleted when ok, nil otherwise.
func refused(ok bool, ref saver.CheckpointRef, role string) error {
	if !ok {
		return nil
	}
	return saver.CheckpointDeleted(ref, role)
}

// buryStragglers deletes, with their writes, and tombstones the
// checkpoints under prefix (a thread's, or a namespace's) whose parent has
// a tombstone, but for the ids in spare, pass after pass until a pass finds
// none. They are the puts that raced a deletion: each passed its check
// before its parent was tombstoned, and landed where the deletion had
// already been. A put after a pass finds its parent tombstoned and is
// refused, so the passes end. DeleteForRuns passes the runs it deletes and
// the checkpoints there were when it began (present): it keeps another
// run's checkpoint whose parent it deletes, so only a checkpoint of one of
// runs, or one that came during the deletion, is a straggler.
func (s *Store) buryStragglers(ctx context.Context, op string, prefix []byte, runs, present map[string]bool) error {
	for {
		found := 0
		err := s.buryWhere(ctx, op, prefix, func(tx kvTx, rest, v []byte) (bool, error) {
			var node saver.Node
			if _, err := decodeNode(&node, v); err != nil || node.ParentID == "" {
				return false, err
			}
			// rest starts at the namespace, or at the id when prefix ends
			// with one.
			k := bytes.Clone(prefix)
			k = append(k, rest...)
			parts, err := parseKey(k, 4)
			if err != nil {
				return false, err
			}
			if present[parts[3]] {
				run, _, err := recordRunID(v)
				if err != nil || !runs[run] {
					return false, err
				}
			}
			parent := key(parts[0], parts[1], parts[2], node.ParentID)
			ok, err := buried(tx, parent, s.Now())
			if ok {
				found++
			}
			return ok, err
		})
		if err != nil || found == 0 {
			return err
		}
	}
}
