package embedded

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/saver-dev/saver"
)

func checkpointKey(ref saver.CheckpointRef) []byte {
	return key(ref.Tenant, ref.ThreadID, ref.NS, ref.ID)
}

func blobKey(ref saver.CheckpointRef, channel, version string) []byte {
	return key(ref.Tenant, ref.ThreadID, ref.NS, channel, version)
}

// PutCheckpoint upserts the checkpoint and inserts each blob that is absent
// (or expired), expiring by the blob lifetime rule (saver.NewBlobExpiry).
// Every blob the checkpoint references through its channel versions then
// lives at least as long as the checkpoint (see extendBlob).
// With ExpectHead, the namespace's head is compared in the same transaction
// (see headOf): a moved head fails the put before it writes anything. Write
// transactions are serialised, so the head read in a put's transaction is
// the head its write lands on: the store honours ExpectHead. A put whose
// parent or own id a deletion tombstoned stores nothing (EGONE, see
// refusePut).
func (s *Store) PutCheckpoint(ctx context.Context, in saver.PutCheckpoint) error {
	// Encode before the transaction: the group commit may run the function twice, and
	// the encoding is the same every time.
	p, err := s.encodePut(&in)
	if err != nil {
		return translate("put checkpoint", err)
	}
	var moved error // the conflict or tombstone the last run of the function found
	err = s.update(ctx, "put checkpoint", func(tx kvTx) error {
		now := s.Now()
		// Checked in the put's own transaction: a deletion's tombstone is
		// laid in the transaction that deletes, so no put slips between.
		var err error
		if moved, err = s.refusePut(tx, &in, now); moved != nil || err != nil {
			return err // write nothing, as below
		}
		if in.ExpectHead != nil && !skipHeadCheck {
			// On a moved head, write nothing, yet let the transaction
			// commit: failing it would roll back the writes of the calls
			// sharing it, which would all run again alone.
			if moved, err = headMoved(tx, &in, now); moved != nil || err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketCheckpoints).Put(p.key, p.checkpoint); err != nil {
			return err
		}
		if err := tx.Bucket(bucketNodes).Put(p.key, p.node); err != nil {
			return err
		}
		return p.putBlobs(tx.Bucket(bucketBlobs), in.ExpiresAt, now)
	})
	if err != nil {
		return err
	}
	return moved
}

// encodedPut is a put's records, encoded once for every run of its
// transaction's function.
type encodedPut struct {
	key, checkpoint, node []byte
	blobs                 []keyValue
	refs                  [][]byte // the keys of the blobs the checkpoint references
}

type keyValue struct{ k, v []byte }

func (s *Store) encodePut(in *saver.PutCheckpoint) (*encodedPut, error) {
	cv, err := encodeCheckpoint(&in.Checkpoint)
	if err != nil {
		return nil, err
	}
	nv, err := nodeRecordOf(cv) // the tree index's entry (treeindex.go)
	if err != nil {
		return nil, err
	}
	p := &encodedPut{key: checkpointKey(in.CheckpointRef), checkpoint: cv, node: nv}
	p.blobs = make([]keyValue, len(in.Blobs))
	blobExp := saver.NewBlobExpiry(in.ExpiresAt, s.Now())
	for i, b := range in.Blobs {
		v, err := encodeBlob(b.Value, blobExp)
		if err != nil {
			return nil, err
		}
		p.blobs[i] = keyValue{blobKey(in.CheckpointRef, b.Channel, b.Version), v}
	}
	p.refs = make([][]byte, 0, len(in.ChannelVersions))
	for ch, ver := range in.ChannelVersions {
		p.refs = append(p.refs, blobKey(in.CheckpointRef, ch, ver))
	}
	return p, nil
}

// headMoved returns the conflict of a put whose ExpectHead is not the
// namespace's head, nil if it is.
func headMoved(tx kvTx, in *saver.PutCheckpoint, now time.Time) (moved, err error) {
	head, err := headOf(tx.Bucket(bucketCheckpoints), in.CheckpointRef, now)
	if err != nil || head == *in.ExpectHead {
		return nil, err
	}
	return saver.HeadMoved(in.ThreadID, in.NS, head, *in.ExpectHead), nil
}

// putBlobs stores the put's blobs that are not there yet and makes every
// blob the checkpoint references outlive it.
func (p *encodedPut) putBlobs(bb kvBucket, expiresAt int64, now time.Time) error {
	for _, b := range p.blobs {
		v, err := getLive(bb, b.k, now)
		if err != nil {
			return err
		}
		if v != nil {
			continue
		}
		if err := bb.Put(b.k, b.v); err != nil {
			return err
		}
	}
	// A blob just inserted already outlives the checkpoint; the lookup
	// finds nothing to do.
	for _, k := range p.refs {
		if err := extendBlob(bb, k, expiresAt, now); err != nil {
			return err
		}
	}
	return nil
}

// headOf returns the id of the newest live checkpoint of ref's namespace,
// "" if none: the one GetTuple returns as the latest.
func headOf(cps kvBucket, ref saver.CheckpointRef, now time.Time) (string, error) {
	prefix := key(ref.Tenant, ref.ThreadID, ref.NS)
	k, _, err := lastLive(cps.Cursor(), prefix, now)
	if k == nil || err != nil {
		return "", err
	}
	head, _, err := nextComponent(k[len(prefix):])
	return head, err
}

// GetTuple returns the checkpoint named by ref, or the latest of its
// namespace when ref.ID is empty; expired checkpoints are passed over.
func (s *Store) GetTuple(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
	var tup *saver.Tuple
	err := s.view(ctx, "get tuple", func(tx kvTx) error {
		now := s.Now()
		cp, err := findCheckpoint(tx.Bucket(bucketCheckpoints), ref, now)
		if err != nil {
			return err
		}
		if cp == nil {
			return saver.CheckpointNotFound(ref)
		}
		tup, err = readTuple(ctx, tx, cp, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return tup, nil
}

// findCheckpoint returns the live checkpoint named by ref, or the latest
// live one of its namespace when ref.ID is empty; nil if there is none.
func findCheckpoint(cps kvBucket, ref saver.CheckpointRef, now time.Time) (*saver.Checkpoint, error) {
	var v []byte
	var err error
	if ref.ID != "" {
		v, err = getLive(cps, checkpointKey(ref), now)
	} else {
		prefix := key(ref.Tenant, ref.ThreadID, ref.NS)
		var k []byte
		k, v, err = lastLive(cps.Cursor(), prefix, now)
		if k != nil && err == nil {
			ref.ID, _, err = nextComponent(k[len(prefix):])
		}
	}
	if v == nil || err != nil {
		return nil, err
	}
	return decodeCheckpoint(ref, v)
}

// lastWithPrefix returns the last key that starts with prefix and is below
// upper, with its value: one seek and one step back, whatever the number of
// keys in the prefix.
func lastWithPrefix(c kvCursor, prefix, upper []byte) ([]byte, []byte) {
	k, v := c.Seek(upper)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, nil
	}
	return k, v
}

// readTuple completes a checkpoint with its values, resolved by direct
// lookups through its channel versions, and its writes, leaving out what
// has expired at now. The bytes it reads are charged to ctx's budget
// (saver.Take) before they are decoded.
func readTuple(ctx context.Context, tx kvTx, cp *saver.Checkpoint, now time.Time) (*saver.Tuple, error) {
	if err := saver.Take(ctx, cp.Body.Size()); err != nil {
		return nil, err
	}
	tup := &saver.Tuple{Checkpoint: *cp}
	bb := tx.Bucket(bucketBlobs)
	for ch, ver := range cp.ChannelVersions {
		v := bb.Get(blobKey(cp.CheckpointRef, ch, ver))
		if v == nil {
			continue
		}
		if err := saver.Take(ctx, int64(len(v))); err != nil {
			return nil, err
		}
		val, exp, err := decodeBlob(v)
		if err != nil {
			return nil, err
		}
		if val.Type == saver.EmptyType || saver.Expired(exp, now) {
			continue
		}
		tup.Values = append(tup.Values, saver.Blob{Channel: ch, Version: ver, Value: val})
	}
	slices.SortFunc(tup.Values, func(a, b saver.Blob) int { return strings.Compare(a.Channel, b.Channel) })
	var err error
	tup.Writes, err = readWrites(ctx, tx, cp.CheckpointRef, now)
	return tup, err
}
