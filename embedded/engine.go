package embedded

import (
	"bytes"
	"context"
	"errors"
)

// The store keeps its data in an ordered key-value engine seen through the
// small API below, shaped like bbolt's: read transactions that see one
// state, write transactions that commit durably or not at all, buckets and
// cursors. Two engines implement it: Pebble (pebble.go), the default for a
// new store, whose write-ahead log commits with one sync, and bbolt, which
// stores written before Pebble keep opening on (its commits sync twice: the
// pages, then the meta page).
//
// Keys and values a cursor or Get returns are valid until the transaction
// ends, or, from a cursor, until it moves: callers copy what they keep
// longer. A cursor must not move on after its bucket changed in the same
// transaction (bbolt's rule): callers collect keys, then write.

// kvTx is a transaction: read-only from engine.View, read-write from
// engine.Update.
type kvTx interface {
	// Bucket returns the named bucket, nil if the store has none of the name.
	Bucket(name []byte) kvBucket
}

// kvBucket is one bucket of a transaction.
type kvBucket interface {
	Get(k []byte) []byte
	Put(k, v []byte) error
	Delete(k []byte) error
	Cursor() kvCursor
}

// kvCursor walks a bucket in key order; each move returns the key and value
// it lands on, nil at either end.
type kvCursor interface {
	First() (k, v []byte)
	Last() (k, v []byte)
	Seek(seek []byte) (k, v []byte)
	Next() (k, v []byte)
	Prev() (k, v []byte)
}

// engine is the key-value engine under a Store.
type engine interface {
	// View runs fn in a read transaction.
	View(fn func(kvTx) error) error
	// Update runs fn in a write transaction and commits it durably (synced
	// to disk) when fn succeeds; nothing of it is stored otherwise. Calls
	// are serialised by the caller (groupCommit).
	Update(fn func(kvTx) error) error
	// Close releases the store.
	Close() error
	// Name is the engine's name, for logs.
	Name() string
	// HasRoom reports whether the store's disk has room for writes again,
	// once a write failed for want of it (space.go).
	HasRoom() error
}

// errClosed is an engine used after Close.
var errClosed = errors.New("the store is closed")

// scanPrefix calls fn for every key under prefix in b, in key order,
// stopping at fn's first error or when ctx ends (checked every 256 keys, so
// that a cancelled request stops a long scan).
func scanPrefix(ctx context.Context, b kvBucket, prefix []byte, fn func(k, v []byte) error) error {
	c := b.Cursor()
	n := 0
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := checkCtx(ctx, n); err != nil {
			return err
		}
		n++
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}
