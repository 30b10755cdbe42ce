package embedded

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

// The tree index: what tree queries read, kept apart from the checkpoint
// records so that a query of a long thread reads a few dozen bytes a
// checkpoint instead of its body, metadata and versions (a 10,000-deep
// thread's records are tens of megabytes; its index well under one).
//
// The nodes bucket holds, under each checkpoint's key, a node record: a
// checkpoint record cut down to the fields decodeNode reads (its expiry,
// parent link, source, step and parents), so expiry code (live, withExpiry,
// Sweep, copyBatch) treats it as any other record. Under the key of each
// error or interrupt write, the flag writes of a node, it holds a record
// with that write's expiry only. A checkpoint's key is a prefix of its
// writes' keys, so one scan of a thread's prefix meets each node right
// before its flags.
//
// Every change to a checkpoint or a special write changes its index entry
// in the same transaction (PutCheckpoint, PutWrites, SetExpiry,
// DeleteForRuns); the batched deletions and copies of whole threads go
// through the index as through the other thread buckets, and prune makes
// the index agree with what it left. Stores written before the index get
// it once, when Open finds no marker (indexTree).
var (
	bucketNodes = []byte("nodes")
	// bucketMeta holds facts about the store itself.
	bucketMeta = []byte("meta")
)

// metaTreeIndex marks a store whose tree index is whole.
var metaTreeIndex = []byte("tree_index")

// nodeRecord is the value of a node in the nodes bucket. Field names are
// those of checkpointRecord and its metadata, so decodeNode reads both.
type nodeRecord struct {
	ExpiresAt int64        `msgpack:"expires_at"`
	ParentID  string       `msgpack:"parent_id,omitempty"`
	Metadata  nodeMetadata `msgpack:"metadata"`
}

type nodeMetadata struct {
	Source  string            `msgpack:"source,omitempty"`
	Step    int64             `msgpack:"step,omitempty"`
	Parents map[string]string `msgpack:"parents,omitempty"`
}

// flagRecord is the value of an error or interrupt write in the nodes
// bucket: the write's expiry.
type flagRecord struct {
	ExpiresAt int64 `msgpack:"expires_at"`
}

// nodeRecordOf returns the node record of a checkpoint record.
func nodeRecordOf(cv []byte) ([]byte, error) {
	var n saver.Node
	exp, err := decodeNode(&n, cv)
	if err != nil {
		return nil, fmt.Errorf("decode checkpoint node: %w", err)
	}
	return msgpack.Marshal(&nodeRecord{
		ExpiresAt: exp,
		ParentID:  n.ParentID,
		Metadata:  nodeMetadata{Source: n.Source, Step: n.Step, Parents: n.Parents},
	})
}

// isFlagIdx reports whether a write at idx marks its node: an error or an
// interrupt.
func isFlagIdx(idx int64) bool {
	return idx == saver.SpecialChannelIdx[saver.ChannelError] || idx == saver.SpecialChannelIdx[saver.ChannelInterrupt]
}

func encodeFlag(expiresAt int64) ([]byte, error) {
	return msgpack.Marshal(&flagRecord{ExpiresAt: expiresAt})
}

// indexTree builds the tree index of a store written before it had one:
// a node record for every checkpoint record and a flag for every error or
// interrupt write, in transactions of maxCopyBatch records, then the
// marker. A crash part-way leaves no marker, and the next Open starts again
// (each record it writes is the same every time). It runs in Open, before
// the store serves anything.
func (s *Store) indexTree(ctx context.Context) error {
	var marked bool
	err := s.view(ctx, "index tree", func(tx kvTx) error {
		marked = tx.Bucket(bucketMeta).Get(metaTreeIndex) != nil
		return nil
	})
	if err != nil || marked {
		return err
	}
	start, n := time.Now(), 0
	for _, name := range [][]byte{bucketCheckpoints, bucketWrites} {
		for from := []byte{}; from != nil; {
			var next []byte
			err := s.update(ctx, "index tree", func(tx kvTx) error {
				var err error
				next, err = indexBatch(tx, name, from, &n)
				return err
			})
			if err != nil {
				return err
			}
			from = next
		}
	}
	err = s.update(ctx, "index tree", func(tx kvTx) error {
		return tx.Bucket(bucketMeta).Put(metaTreeIndex, []byte{1})
	})
	if err == nil && n > 0 {
		s.Logger.Info("tree index built", "entries", n, "took", time.Since(start).Round(time.Millisecond))
	}
	return err
}

// indexBatch writes the index entries of up to maxCopyBatch records of
// bucket (checkpoints or writes) from the key from on, and returns the key
// to resume at, nil at the end.
func indexBatch(tx kvTx, bucket, from []byte, n *int) ([]byte, error) {
	var ks, vs [][]byte
	c := tx.Bucket(bucket).Cursor()
	var k, v []byte
	if len(from) == 0 {
		k, v = c.First()
	} else {
		k, v = c.Seek(from)
	}
	for i := 0; k != nil && i < maxCopyBatch; k, v = c.Next() {
		i++
		var rec []byte
		var err error
		if bytes.Equal(bucket, bucketCheckpoints) {
			rec, err = nodeRecordOf(v)
		} else {
			rec, err = flagOf(k, v)
		}
		if err != nil {
			return nil, fmt.Errorf("index %q: %w", k, err)
		}
		if rec != nil {
			ks, vs = append(ks, bytes.Clone(k)), append(vs, rec)
		}
	}
	var next []byte
	if k != nil {
		next = bytes.Clone(k)
	}
	nb := tx.Bucket(bucketNodes)
	for i := range ks {
		if err := nb.Put(ks[i], vs[i]); err != nil {
			return nil, err
		}
	}
	*n += len(ks)
	return next, nil
}

// flagOf returns the flag record of the write record v at key k, nil if the
// write is neither an error nor an interrupt.
func flagOf(k, v []byte) ([]byte, error) {
	// The idx is a write key's last component, and these two encode
	// without escapes: a key ending in their bytes ends in their idx.
	if !bytes.HasSuffix(k, errorIdx) && !bytes.HasSuffix(k, interruptIdx) {
		return nil, nil
	}
	exp, err := recordExpiry(v)
	if err != nil {
		return nil, err
	}
	return encodeFlag(exp)
}

// setNodeExpiry gives the index entries of the checkpoint at key ck the
// expiries SetExpiry gave the checkpoint (expiresAt exactly) and its
// writes (no earlier than expiresAt).
func setNodeExpiry(tx kvTx, ck []byte, expiresAt int64, now time.Time) error {
	nb := tx.Bucket(bucketNodes)
	if v := nb.Get(ck); v != nil {
		nv, err := withExpiry(v, expiresAt)
		if err != nil {
			return err
		}
		if err := nb.Put(ck, nv); err != nil {
			return err
		}
	}
	return extendWrites(nb, ck, expiresAt, now)
}

// reconcileNodes deletes the thread's index entries whose checkpoint or
// write is no longer stored: what remains after prune deleted some of
// them, in transactions of maxDeleteBatch deletions.
func (s *Store) reconcileNodes(ctx context.Context, op string, prefix []byte) error {
	return s.deleteWhere(ctx, op, bucketNodes, prefix, func(tx kvTx, rest, _ []byte) (bool, error) {
		k := append(bytes.Clone(prefix), rest...)
		_, tail, err := nextComponent(rest)
		if err == nil {
			_, tail, err = nextComponent(tail)
		}
		if err != nil {
			return false, err
		}
		counterpart := bucketWrites
		if len(tail) == 0 {
			counterpart = bucketCheckpoints
		}
		return tx.Bucket(counterpart).Get(k) == nil, nil
	})
}
