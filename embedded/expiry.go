package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

var _ saver.Expirer = (*Store)(nil)

// fieldExpiresAt is the name of the expiry field in checkpoint, blob and
// write records.
const fieldExpiresAt = "expires_at"

// recordExpiry skims a record's expiry out of it: the first field of every
// record written since expiry exists, so one key comparison. Older records
// have none and read as 0, never.
func recordExpiry(v []byte) (int64, error) {
	s := skim{b: v}
	fields := s.mapLen()
	for i := uint64(0); i < fields && s.err == nil; i++ {
		if string(s.strBytes()) != fieldExpiresAt {
			s.skip()
			continue
		}
		exp, ok := s.next().integer()
		if !ok && s.err == nil {
			return 0, fmt.Errorf("decode expiry: %w", errBadRecord)
		}
		return exp, s.err
	}
	if s.err != nil {
		return 0, fmt.Errorf("decode expiry: %w", s.err)
	}
	return 0, nil
}

// live reports whether the record v has not expired at now.
func live(v []byte, now time.Time) (bool, error) {
	exp, err := recordExpiry(v)
	return err == nil && !saver.Expired(exp, now), err
}

// withExpiry returns a copy of the record v with its expiry set: the
// expires_at field first, then every other field byte for byte, so neither
// payloads nor metadata are decoded. It adds the field to older records.
func withExpiry(v []byte, expiresAt int64) ([]byte, error) {
	s := skim{b: v}
	fields := s.mapLen()
	kept := make([][]byte, 0, fields)
	for i := uint64(0); i < fields && s.err == nil; i++ {
		start := s.b
		name := s.strBytes()
		s.skip()
		if string(name) != fieldExpiresAt {
			kept = append(kept, start[:len(start)-len(s.b)])
		}
	}
	if s.err == nil && len(s.b) != 0 {
		s.err = errBadRecord
	}
	if s.err != nil {
		return nil, fmt.Errorf("rewrite expiry: %w", s.err)
	}
	out := appendMapLen(make([]byte, 0, len(v)+2*len(fieldExpiresAt)), len(kept)+1)
	// As msgpack encodes the int64 field: a fixstr name, then int 64.
	out = append(out, 0xa0|byte(len(fieldExpiresAt)))
	out = append(out, fieldExpiresAt...)
	out = binary.BigEndian.AppendUint64(append(out, 0xd3), uint64(expiresAt))
	for _, f := range kept {
		out = append(out, f...)
	}
	return out, nil
}

// appendMapLen appends a msgpack map header for n entries.
func appendMapLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x80|byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
}

// getLive returns the value under k, or nil if there is none or it has
// expired at now.
func getLive(b kvBucket, k []byte, now time.Time) ([]byte, error) {
	v := b.Get(k)
	if v == nil {
		return nil, nil
	}
	if ok, err := live(v, now); !ok {
		return nil, err
	}
	return v, nil
}

// lastLive returns the newest checkpoint under prefix, a (tenant, thread,
// ns) key, that has not expired at now: one seek to the end of the
// namespace, then back over expired checkpoints. Nil if there is none.
func lastLive(c kvCursor, prefix []byte, now time.Time) ([]byte, []byte, error) {
	k, v := lastWithPrefix(c, prefix, prefixEnd(prefix))
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		ok, err := live(v, now)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return k, v, nil
		}
	}
	return nil, nil, nil
}

// extendBlob applies the blob rule (saver.ExtendedBlobExpiry) to the blob
// under k for a checkpoint expiring at expiresAt: a point lookup, and a
// rewrite only when the blob would expire first. A missing or expired blob
// is left alone: what has expired never comes back.
func extendBlob(bb kvBucket, k []byte, expiresAt int64, now time.Time) error {
	v := bb.Get(k)
	if v == nil {
		return nil
	}
	exp, err := recordExpiry(v)
	if err != nil || saver.Expired(exp, now) {
		return err
	}
	next, ok := saver.ExtendedBlobExpiry(expiresAt, exp, now)
	if !ok {
		return nil
	}
	nv, err := withExpiry(v, next)
	if err != nil {
		return err
	}
	return bb.Put(k, nv)
}

// SetExpiry sets the checkpoint's expiry, 0 to pin it, and extends its
// blobs (by the blob rule) and its writes (to expiresAt) when they would
// expire first; it never shortens them.
// Returns EINVALID for an empty ref.ID, ENOTFOUND if the checkpoint does
// not exist or has expired.
func (s *Store) SetExpiry(ctx context.Context, ref saver.CheckpointRef, expiresAt int64) error {
	if err := saver.RequireCheckpointID(ref); err != nil {
		return err
	}
	k := checkpointKey(ref)
	return s.update(ctx, "set expiry", func(tx kvTx) error {
		now := s.Now()
		cps := tx.Bucket(bucketCheckpoints)
		v, err := getLive(cps, k, now)
		if err != nil {
			return err
		}
		if v == nil {
			return saver.CheckpointNotFound(ref)
		}
		// Everything read from v is read before the bucket changes.
		var links struct {
			ChannelVersions map[string]string `msgpack:"channel_versions"`
		}
		if err := msgpack.Unmarshal(v, &links); err != nil {
			return fmt.Errorf("decode checkpoint: %w", err)
		}
		nv, err := withExpiry(v, expiresAt)
		if err != nil {
			return err
		}
		if err := cps.Put(k, nv); err != nil {
			return err
		}
		bb := tx.Bucket(bucketBlobs)
		for ch, ver := range links.ChannelVersions {
			if err := extendBlob(bb, blobKey(ref, ch, ver), expiresAt, now); err != nil {
				return err
			}
		}
		if err := extendWrites(tx.Bucket(bucketWrites), k, expiresAt, now); err != nil {
			return err
		}
		return setNodeExpiry(tx, k, expiresAt, now)
	})
}

// extendWrites makes the live writes of the checkpoint whose key is ck (the
// prefix of its writes' keys) expire no earlier than expiresAt.
func extendWrites(wb kvBucket, ck []byte, expiresAt int64, now time.Time) error {
	// Collect before writing: a bbolt cursor is not safe to move on after
	// its bucket changed.
	var ks, vs [][]byte
	c := wb.Cursor()
	for k, v := c.Seek(ck); k != nil && bytes.HasPrefix(k, ck); k, v = c.Next() {
		exp, err := recordExpiry(v)
		if err != nil {
			return err
		}
		if saver.Expired(exp, now) || saver.Later(exp, expiresAt) == exp {
			continue
		}
		nv, err := withExpiry(v, saver.Later(exp, expiresAt))
		if err != nil {
			return err
		}
		ks, vs = append(ks, bytes.Clone(k)), append(vs, nv)
	}
	for i := range ks {
		if err := wb.Put(ks[i], vs[i]); err != nil {
			return err
		}
	}
	return nil
}

// sweepBatch is how many keys one Sweep transaction reads, so that a sweep
// of a large file never holds the writer lock for long.
const sweepBatch = 1000

// Sweep deletes the checkpoints, blobs, writes and tombstones that have expired, and
// returns how many it deleted. Reads never return expired items, so Sweep
// only gives their space back; run it now and then. It works through the
// file in short transactions, between which writers proceed.
//
// An expired blob is safe to delete: a blob lives at least as long as the
// checkpoints that reference it, and a put never revives an expired one.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	total := 0
	for _, name := range append(slices.Clone(threadBuckets), bucketTombstones) {
		var from []byte
		for {
			var deleted int
			var next []byte
			err := s.update(ctx, "sweep", func(tx kvTx) error {
				now := s.Now()
				b := tx.Bucket(name)
				var doomed [][]byte
				deleted, next = 0, nil
				c := b.Cursor()
				k, v := c.First()
				if from != nil {
					k, v = c.Seek(from)
				}
				for n := 0; k != nil; k, v = c.Next() {
					if n == sweepBatch {
						next = bytes.Clone(k)
						break
					}
					n++
					ok, err := live(v, now)
					if err != nil {
						return err
					}
					if !ok {
						doomed = append(doomed, bytes.Clone(k))
					}
				}
				for _, k := range doomed {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
				deleted = len(doomed)
				return nil
			})
			if err != nil {
				return total, err
			}
			// Index entries are not counted: they are the same
			// checkpoints and writes again (treeindex.go).
			if !bytes.Equal(name, bucketNodes) {
				total += deleted
			}
			if next == nil {
				break
			}
			from = next
		}
	}
	return total, nil
}
