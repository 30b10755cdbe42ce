package embedded

import (
	"context"
	"encoding/binary"
	"math"
	"time"

	"github.com/saver-dev/saver"
)

// SetScanHook makes DeleteForRuns call hook inside the transaction in which
// it looks for the runs' checkpoints, once it has read the first.
func (s *Store) SetScanHook(hook func()) { s.scanHook = hook }

// SetBuryHook makes DeleteThread and DeleteForRuns call hook after each
// transaction that deletes and tombstones checkpoints.
func (s *Store) SetBuryHook(hook func()) { s.buryHook = hook }

// keyCount counts the keys of a bucket.
func keyCount(b kvBucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// PebbleMemTable is the size of a Pebble store's memtables: the most a
// flush may still need room for.
const PebbleMemTable = pebbleMemTable

// Flush writes a Pebble store's memtable to a table.
func (s *Store) Flush() error { return s.db.(*pebbleEngine).db.Flush() }

// PutItemV1 writes an item record of version 1, as stores wrote them before
// vectors moved to item_vectors: the vectors inside the record, between its
// header and its value. It encodes the layout here, apart from encodeItem,
// so that the test pins the old format as it was written.
func (s *Store) PutItemV1(tenant string, ns saver.Namespace, key string, expiresAt time.Time, ttl time.Duration, createdAt, updatedAt time.Time, vectors [][]float32, value []byte) error {
	dims := 0
	if len(vectors) > 0 {
		dims = len(vectors[0])
	}
	b := []byte{1}
	for _, x := range []int64{unixNanos(expiresAt), int64(ttl), createdAt.UnixNano(), updatedAt.UnixNano()} {
		b = binary.BigEndian.AppendUint64(b, uint64(x))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(vectors)))
	b = binary.BigEndian.AppendUint32(b, uint32(dims))
	for _, v := range vectors {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	b = append(b, value...)
	k := itemKey(tenant, ns, key)
	return s.update(context.Background(), "test", func(tx kvTx) error {
		if !expiresAt.IsZero() {
			if err := tx.Bucket(bucketItemExpiry).Put(itemExpiryKey(expiresAt.UnixNano(), k), []byte{}); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketItems).Put(k, b)
	})
}

// ItemVectorKeys counts the keys of item_vectors.
func (s *Store) ItemVectorKeys() (n int, err error) {
	err = s.view(context.Background(), "test", func(tx kvTx) error {
		n = keyCount(tx.Bucket(bucketItemVectors))
		return nil
	})
	return n, err
}
