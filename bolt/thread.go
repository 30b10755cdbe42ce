package bolt

import (
	"bytes"
	"context"
	"time"

	"go.etcd.io/bbolt"

	"github.com/saver-dev/saver"
)

// threadBuckets hold the data of threads, all keyed (tenant, thread, ...).
var threadBuckets = [][]byte{bucketCheckpoints, bucketBlobs, bucketWrites}

// DeleteThread removes every checkpoint, blob and write of the thread.
func (s *Store) DeleteThread(ctx context.Context, tenant, threadID string) error {
	prefix := key(tenant, threadID)
	return s.update(ctx, "delete thread", func(tx *bbolt.Tx) error {
		return deleteThread(tx, prefix)
	})
}

func deleteThread(tx *bbolt.Tx, prefix []byte) error {
	for _, name := range threadBuckets {
		if err := deletePrefix(tx.Bucket(name), prefix, nil); err != nil {
			return err
		}
	}
	return nil
}

// deletePrefix deletes the keys under prefix for which keep is false (all of
// them when keep is nil). Keys are collected first: a bbolt cursor is not
// safe to move on after its bucket changed.
func deletePrefix(b *bbolt.Bucket, prefix []byte, keep func(rest []byte) (bool, error)) error {
	var doomed [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if keep != nil {
			ok, err := keep(k[len(prefix):])
			if err != nil {
				return err
			}
			if ok {
				continue
			}
		}
		doomed = append(doomed, bytes.Clone(k))
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// DeleteForRuns removes the checkpoints whose metadata run_id is one of
// runIDs, and their writes. Blobs stay: other checkpoints may share them.
//
// There is no index by run id, so this scans and decodes every checkpoint of
// the tenant. It is an administrative call (LangGraph's rollback), rare
// enough not to pay for an index on every put.
func (s *Store) DeleteForRuns(ctx context.Context, tenant string, runIDs []string) error {
	if len(runIDs) == 0 {
		return nil
	}
	runs := make(map[string]bool, len(runIDs))
	for _, r := range runIDs {
		runs[r] = true
	}
	prefix := key(tenant)
	return s.update(ctx, "delete for runs", func(tx *bbolt.Tx) error {
		cps := tx.Bucket(bucketCheckpoints)
		var doomed [][]byte
		c := cps.Cursor()
		n := 0
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := checkCtx(ctx, n); err != nil {
				return err
			}
			n++
			parts, err := parseKey(k, 4)
			if err != nil {
				return err
			}
			cp, err := decodeCheckpoint(saver.CheckpointRef{Tenant: parts[0], ThreadID: parts[1], NS: parts[2], ID: parts[3]}, v)
			if err != nil {
				return err
			}
			if run, ok := cp.Metadata["run_id"].(string); ok && runs[run] {
				doomed = append(doomed, bytes.Clone(k))
			}
		}
		wb := tx.Bucket(bucketWrites)
		for _, k := range doomed {
			if err := cps.Delete(k); err != nil {
				return err
			}
			// A checkpoint's key is the prefix of its writes' keys.
			if err := deletePrefix(wb, k, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// CopyThread copies every live checkpoint, blob and write of src to dst.
// Values are copied byte for byte, expiries included, so the copy reads
// exactly what the source reads and expires with it.
func (s *Store) CopyThread(ctx context.Context, tenant, src, dst string) error {
	srcPrefix, dstPrefix := key(tenant, src), key(tenant, dst)
	return s.update(ctx, "copy thread", func(tx *bbolt.Tx) error {
		now := s.Now()
		found := false
		c := tx.Bucket(bucketCheckpoints).Cursor()
		for k, v := c.Seek(srcPrefix); k != nil && bytes.HasPrefix(k, srcPrefix) && !found; k, v = c.Next() {
			var err error
			if found, err = live(v, now); err != nil {
				return err
			}
		}
		if !found {
			return saver.Errorf(saver.ENOTFOUND, "Thread %q has no checkpoint.", src)
		}
		for _, name := range threadBuckets {
			b := tx.Bucket(name)
			// Collect before writing: the destination may sort inside the
			// range being read.
			var ks, vs [][]byte
			c := b.Cursor()
			for k, v := c.Seek(srcPrefix); k != nil && bytes.HasPrefix(k, srcPrefix); k, v = c.Next() {
				if ok, err := live(v, now); !ok {
					if err != nil {
						return err
					}
					continue
				}
				ks = append(ks, append(bytes.Clone(dstPrefix), k[len(srcPrefix):]...))
				vs = append(vs, bytes.Clone(v))
			}
			for i := range ks {
				if err := b.Put(ks[i], vs[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Prune deletes the threads (PruneDelete) or keeps only the latest live
// checkpoint of each namespace with its writes and the blobs it references
// (PruneKeepLatest).
func (s *Store) Prune(ctx context.Context, tenant string, threadIDs []string, strategy saver.PruneStrategy) error {
	switch strategy {
	case saver.PruneDelete, saver.PruneKeepLatest:
	default:
		return saver.Errorf(saver.EINVALID, "Unknown prune strategy %q.", strategy)
	}
	if len(threadIDs) == 0 {
		return nil
	}
	return s.update(ctx, "prune", func(tx *bbolt.Tx) error {
		now := s.Now()
		for _, thread := range threadIDs {
			prefix := key(tenant, thread)
			var err error
			if strategy == saver.PruneDelete {
				err = deleteThread(tx, prefix)
			} else {
				err = keepLatest(ctx, tx, saver.CheckpointRef{Tenant: tenant, ThreadID: thread}, now)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// keepLatest prunes one thread to the latest checkpoint of each namespace
// that is live at now; a namespace with none loses everything.
func keepLatest(ctx context.Context, tx *bbolt.Tx, thread saver.CheckpointRef, now time.Time) error {
	prefix := key(thread.Tenant, thread.ThreadID)
	cps := tx.Bucket(bucketCheckpoints)
	nss, err := distinct(ctx, cps.Cursor(), prefix, 1)
	if err != nil {
		return err
	}
	// latest maps each namespace to its kept checkpoint id; referenced holds
	// the blob keys (after the thread prefix) that kept checkpoints use.
	latest := make(map[string]string, len(nss))
	referenced := make(map[string]bool)
	for _, ns := range nss {
		ref := thread
		ref.NS = ns[0]
		nsPrefix := key(ref.Tenant, ref.ThreadID, ref.NS)
		k, v, err := lastLive(cps.Cursor(), nsPrefix, now)
		if err != nil {
			return err
		}
		if k == nil {
			continue
		}
		parts, err := parseKey(k[len(nsPrefix):], 1)
		if err != nil {
			return err
		}
		ref.ID = parts[0]
		cp, err := decodeCheckpoint(ref, v)
		if err != nil {
			return err
		}
		latest[ref.NS] = ref.ID
		for ch, ver := range cp.ChannelVersions {
			referenced[string(key(ref.NS, ch, ver))] = true
		}
	}
	// Checkpoints and writes are both keyed (ns, id, ...) after the prefix.
	kept := func(rest []byte) (bool, error) {
		ns, rest, err := nextComponent(rest)
		if err != nil {
			return false, err
		}
		id, _, err := nextComponent(rest)
		if err != nil {
			return false, err
		}
		l, ok := latest[ns]
		return ok && l == id, nil
	}
	if err := deletePrefix(cps, prefix, kept); err != nil {
		return err
	}
	if err := deletePrefix(tx.Bucket(bucketWrites), prefix, kept); err != nil {
		return err
	}
	return deletePrefix(tx.Bucket(bucketBlobs), prefix, func(rest []byte) (bool, error) {
		return referenced[string(rest)], nil
	})
}
