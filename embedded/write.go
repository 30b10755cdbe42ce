package embedded

import (
	"bytes"
	"context"
	"time"

	"github.com/saver-dev/saver"
)

func writeKey(ref saver.CheckpointRef, taskID string, idx int64) []byte {
	return key(ref.Tenant, ref.ThreadID, ref.NS, ref.ID, taskID, idxComponent(idx))
}

// PutWrites stores writes against a checkpoint, which need not exist:
// special writes (negative idx) replace, the others are inserted if absent
// or expired. Each write expires at in.ExpiresAt. Writes against a
// checkpoint a deletion tombstoned are refused (EGONE), none stored.
func (s *Store) PutWrites(ctx context.Context, in saver.PutWrites) error {
	type kv struct {
		k, v    []byte
		upserts bool
		flag    []byte // the tree index's entry of an error or interrupt write (treeindex.go)
	}
	writes := make([]kv, len(in.Writes))
	for i := range in.Writes {
		w := &in.Writes[i]
		v, err := encodeWrite(w, in.ExpiresAt)
		if err != nil {
			return translate("put writes", err)
		}
		writes[i] = kv{k: writeKey(in.CheckpointRef, w.TaskID, w.Idx), v: v, upserts: w.Upserts()}
		if isFlagIdx(w.Idx) {
			if writes[i].flag, err = encodeFlag(in.ExpiresAt); err != nil {
				return translate("put writes", err)
			}
		}
	}
	var gone error // the tombstone the last run of the function found
	err := s.update(ctx, "put writes", func(tx kvTx) error {
		now := s.Now()
		ok, err := s.mayBeBuried(tx, checkpointKey(in.CheckpointRef), now)
		if gone = nil; ok || err != nil {
			// Write nothing, yet let the shared transaction commit.
			gone = saver.CheckpointDeleted(in.CheckpointRef, saver.RoleWritesOwner)
			return err
		}
		wb := tx.Bucket(bucketWrites)
		for _, w := range writes {
			if !w.upserts {
				v, err := getLive(wb, w.k, now)
				if err != nil {
					return err
				}
				if v != nil {
					continue
				}
			}
			if err := wb.Put(w.k, w.v); err != nil {
				return err
			}
			if w.flag != nil {
				if err := tx.Bucket(bucketNodes).Put(w.k, w.flag); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return gone
}

// readWrites returns the writes of a checkpoint that have not expired at
// now, in a tuple's order (saver.SortWrites). Keys give (task_id, idx)
// order; the task path is in the value. Their bytes are charged to ctx's
// budget (saver.Take) before they are decoded.
func readWrites(ctx context.Context, tx kvTx, ref saver.CheckpointRef, now time.Time) ([]saver.Write, error) {
	prefix := checkpointKey(ref)
	var writes []saver.Write
	c := tx.Bucket(bucketWrites).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		taskID, rest, err := nextComponent(k[len(prefix):])
		if err != nil {
			return nil, err
		}
		parts, err := parseKey(rest, 1)
		if err != nil {
			return nil, err
		}
		idx, err := parseIdx(parts[0])
		if err != nil {
			return nil, err
		}
		if err := saver.Take(ctx, int64(len(v))); err != nil {
			return nil, err
		}
		w, exp, err := decodeWrite(taskID, idx, v)
		if err != nil {
			return nil, err
		}
		if !saver.Expired(exp, now) {
			writes = append(writes, w)
		}
	}
	saver.SortWrites(writes)
	return writes, nil
}
