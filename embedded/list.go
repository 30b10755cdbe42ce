package embedded

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"time"

	"github.com/saver-dev/saver"
)

// ListCheckpoints returns the checkpoints matching f in listing order
// (saver.ComparePositions). Expired checkpoints are passed over before the
// limit counts.
//
// Every (thread, namespace) in scope is a group whose keys are in id order.
// Each group is walked backwards from the highest id the filter allows, and
// the groups are merged in listing order, so a listing with a limit reads
// about limit checkpoints per group, not the whole thread.
// With no thread, the groups are every (thread, namespace) of the tenant.
// The groups share one cursor, each keeping only its current key: a cursor
// is an iterator with its own buffers on Pebble, and a tenant-wide listing
// has a group per thread.
func (s *Store) ListCheckpoints(ctx context.Context, f saver.ListFilter) ([]*saver.Tuple, error) {
	var out []*saver.Tuple
	err := s.view(ctx, "list checkpoints", func(tx kvTx) error {
		out = nil
		now := s.Now()
		cps := tx.Bucket(bucketCheckpoints)
		c := cps.Cursor()
		groups, err := listGroups(ctx, c, f)
		if err != nil {
			return err
		}
		h := make(groupHeap, 0, len(groups))
		for _, g := range groups {
			it := newGroupIter(c, g, f)
			if it.err != nil {
				return it.err
			}
			if it.k != nil {
				h = append(h, it)
			}
		}
		heap.Init(&h)
		for n := 0; h.Len() > 0 && (f.Limit == 0 || len(out) < f.Limit); n++ {
			if err := checkCtx(ctx, n); err != nil {
				return err
			}
			it := h[0]
			k, v := c.Seek(it.k)
			if !bytes.Equal(k, it.k) {
				return fmt.Errorf("checkpoint key %q is gone from the transaction", it.k)
			}
			tup, err := listed(ctx, tx, it, v, f, now)
			if err != nil {
				return err
			}
			if tup != nil {
				out = append(out, tup)
			}
			it.set(c.Prev())
			if it.err != nil {
				return it.err
			}
			if it.k != nil {
				heap.Fix(&h, 0)
			} else {
				heap.Pop(&h)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listed returns the tuple of the iterator's current checkpoint, whose
// record is v, or nil if it has expired at now or f does not match it.
func listed(ctx context.Context, tx kvTx, it *groupIter, v []byte, f saver.ListFilter, now time.Time) (*saver.Tuple, error) {
	if ok, err := live(v, now); !ok {
		return nil, err
	}
	cp, err := decodeCheckpoint(it.ref, v)
	if err != nil || !f.Matches(cp) {
		return nil, err
	}
	return readTuple(ctx, tx, cp, now)
}

// listGroups returns the (thread, namespace) groups in the filter's scope.
func listGroups(ctx context.Context, c kvCursor, f saver.ListFilter) ([]saver.CheckpointRef, error) {
	if f.ThreadID != "" && f.NS != nil {
		return []saver.CheckpointRef{{Tenant: f.Tenant, ThreadID: f.ThreadID, NS: *f.NS}}, nil
	}
	var groups []saver.CheckpointRef
	if f.ThreadID != "" {
		nss, err := distinct(ctx, c, key(f.Tenant, f.ThreadID), 1)
		for _, ns := range nss {
			groups = append(groups, saver.CheckpointRef{Tenant: f.Tenant, ThreadID: f.ThreadID, NS: ns[0]})
		}
		return groups, err
	}
	pairs, err := distinct(ctx, c, key(f.Tenant), 2)
	for _, p := range pairs {
		if f.NS == nil || *f.NS == p[1] {
			groups = append(groups, saver.CheckpointRef{Tenant: f.Tenant, ThreadID: p[0], NS: p[1]})
		}
	}
	return groups, err
}

// distinct returns the distinct tuples of the n components that follow
// prefix in the keys under it. It seeks past each tuple's range instead of
// reading it: one seek per tuple found.
func distinct(ctx context.Context, c kvCursor, prefix []byte, n int) ([][]string, error) {
	var out [][]string
	k, _ := c.Seek(prefix)
	for i := 0; k != nil && bytes.HasPrefix(k, prefix); i++ {
		if err := checkCtx(ctx, i); err != nil {
			return nil, err
		}
		parts := make([]string, n)
		rest := k[len(prefix):]
		for j := range parts {
			var err error
			if parts[j], rest, err = nextComponent(rest); err != nil {
				return nil, err
			}
		}
		out = append(out, parts)
		k, _ = c.Seek(prefixEnd(k[:len(k)-len(rest)]))
	}
	return out, nil
}

// groupIter walks the checkpoints of one (thread, namespace) backwards, on
// a cursor it shares with the other groups.
type groupIter struct {
	prefix []byte
	// lower is the smallest key the filter can match; nil when unbounded.
	lower []byte
	ref   saver.CheckpointRef // ID is the current checkpoint's
	k     []byte              // the current key, a copy; nil: exhausted
	err   error
}

// newGroupIter positions an iterator on the group's highest checkpoint id
// that f allows: below Before, at most the After cursor's id and at most
// the requested id.
func newGroupIter(c kvCursor, g saver.CheckpointRef, f saver.ListFilter) *groupIter {
	it := &groupIter{prefix: key(g.Tenant, g.ThreadID, g.NS), ref: g}
	upper := prefixEnd(it.prefix)
	capAt := func(b []byte) {
		if bytes.Compare(b, upper) < 0 {
			upper = b
		}
	}
	if f.Before != "" {
		capAt(appendComponent(bytes.Clone(it.prefix), f.Before))
	}
	if f.After != nil {
		capAt(prefixEnd(appendComponent(bytes.Clone(it.prefix), f.After.ID)))
	}
	if f.CheckpointID != "" {
		exact := appendComponent(bytes.Clone(it.prefix), f.CheckpointID)
		capAt(prefixEnd(exact))
		it.lower = exact
	}
	it.set(lastWithPrefix(c, it.prefix, upper))
	return it
}

// set moves the iterator to the key the shared cursor found (its value is
// read again when the group's turn comes: the cursor moves for the others).
func (it *groupIter) set(k, _ []byte) {
	if k == nil || !bytes.HasPrefix(k, it.prefix) || (it.lower != nil && bytes.Compare(k, it.lower) < 0) {
		it.k = nil
		return
	}
	parts, err := parseKey(k[len(it.prefix):], 1)
	if err != nil {
		it.err, it.k = err, nil
		return
	}
	it.k, it.ref.ID = bytes.Clone(k), parts[0]
}

// groupHeap orders iterators by their current checkpoint in listing order.
type groupHeap []*groupIter

func (h groupHeap) Len() int { return len(h) }
func (h groupHeap) Less(i, j int) bool {
	return saver.ComparePositions(h[i].ref.Position(), h[j].ref.Position()) < 0
}
func (h groupHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *groupHeap) Push(x any)   { *h = append(*h, x.(*groupIter)) }
func (h *groupHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
