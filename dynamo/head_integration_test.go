//go:build integration

package dynamo_test

import (
	"fmt"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestHeadGuard runs the contract of conditional puts on the shared table.
func TestHeadGuard(t *testing.T) {
	st := localstack.MustStore(t)
	storetest.RunHeadGuard(t, func(t *testing.T) saver.Store { return st.Store })
}

// TestHeadGuardRequestCounts pins the requests of conditional puts: the
// head's Query, then the put's usual requests with the lifetimes item always
// in the transaction; a head found moved costs the Query alone, and a stale
// token (the head moved by a put without a condition) a Query and a
// transaction more, once.
func TestHeadGuardRequestCounts(t *testing.T) {
	st := localstack.MustStore(t)
	s := st.Store
	ref := storetest.NewRef()
	put := func(t *testing.T, id, head string, channels int) {
		t.Helper()
		in := storetest.NewCheckpoint(ref, id)
		for i := range channels {
			storetest.SetChannel(&in, fmt.Sprint("ch", i), id, "v")
		}
		if head == "-" {
			storetest.MustPutCheckpoint(t, s, in)
			return
		}
		storetest.MustPutCheckpoint(t, s, storetest.ExpectingHead(in, head))
	}
	tests := []struct {
		name string
		want requests
		fn   func(t *testing.T)
	}{
		{"FirstNoBlobs", requests{"Query": 1, "TransactWriteItems": 1}, func(t *testing.T) { put(t, "0001", "", 0) }},
		{"5Blobs", requests{"Query": 1, "TransactWriteItems": 1}, func(t *testing.T) { put(t, "0002", "0001", 5) }},
		// The checks, the namespace item and 97 blobs, then 2 blobs, the
		// checks and the checkpoint with its tree index item.
		{"99Blobs", requests{"Query": 1, "TransactWriteItems": 2}, func(t *testing.T) { put(t, "0003", "0002", 99) }},
		{"Moved", requests{"Query": 1}, func(t *testing.T) {
			storetest.MustConflict(t, s, storetest.ExpectingHead(storetest.NewCheckpoint(ref, "0004"), "0002"))
		}},
		{"Unconditional", requests{"TransactWriteItems": 1}, func(t *testing.T) { put(t, "0004", "-", 0) }},
		{"StaleToken", requests{"Query": 2, "TransactWriteItems": 2}, func(t *testing.T) { put(t, "0005", "0004", 0) }},
		{"AfterStaleToken", requests{"Query": 1, "TransactWriteItems": 1}, func(t *testing.T) { put(t, "0006", "0005", 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustCount(t, st, tt.want, func() { tt.fn(t) })
		})
	}
}
