package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/saver-dev/saver"
)

// PutWrites stores a task's writes in one request: a TransactWriteItems of
// one item per write when they fit one (100 items, 4 MB), a single PutItem
// for one write, and one bundle item otherwise (see bundle.go), so that the
// writes of a put are stored all together or not at all. Writes with a
// negative idx (special channels) replace; the others are inserted only if
// absent or expired, so that a replayed task keeps its first writes, value
// and expiry. A replayed write fails its condition and cancels the
// transaction it shares, and the others go again without it: one more
// request per replay. No checkpoint has to exist: the items simply sort
// after where it will be.
func (s *Store) PutWrites(ctx context.Context, in saver.PutWrites) error {
	now := s.Now()
	writes := in.Writes
	ops := writeOps(in.CheckpointRef, writes, in.ExpiresAt)
	var bundle []writeOp
	// Sizes are measured inline: offloading only shrinks items, so writes
	// that fit one transaction now still fit once offloaded.
	bundled := len(chunkOps(ops, maxTransactItems, maxTransactBytes)) > 1
	if bundled {
		op, specials, err := s.bundle(ctx, in)
		if err != nil {
			return fmt.Errorf("dynamo: put writes on %s: %w", in.ID, err)
		}
		writes, bundle = specials, []writeOp{op}
		ops = writeOps(in.CheckpointRef, writes, in.ExpiresAt)
	}
	for i, w := range writes {
		op := &ops[i]
		if err := s.offload(ctx, in.Tenant, in.ThreadID, op.item, attrValue, w.Value, in.ExpiresAt); err != nil {
			return fmt.Errorf("dynamo: put writes on %s: write %s/%d: %w", in.ID, w.TaskID, w.Idx, err)
		}
		if !w.Upserts() {
			op.cond = absentOrExpired(now)
		}
	}
	ops = append(ops, bundle...)
	if bundled && len(chunkOps(ops, maxTransactItems, maxTransactBytes)) > 1 {
		return saver.Errorf(saver.ETOOLARGE, "A put_writes of more than %d writes keeps its writes to special channels (negative idx) beside them in one transaction: at most %d of them, and %d MB; this one has %d.",
			maxTransactItems, maxTransactItems-1, maxTransactBytes>>20, len(writes))
	}
	// Each round drops at least one op, so the loop ends.
	for len(ops) > 0 {
		err := s.transact(ctx, ops)
		var cf *condFailed
		if !errors.As(err, &cf) {
			if err != nil {
				return fmt.Errorf("dynamo: put writes on %s: %w", in.ID, err)
			}
			return nil
		}
		kept := ops[:0:0]
		for i, op := range ops {
			if _, stored := cf.items[i]; !stored {
				kept = append(kept, op)
			}
		}
		ops = kept
	}
	return nil
}

// writeOps returns a put of each write's item, values inline.
func writeOps(ref saver.CheckpointRef, writes []saver.Write, exp int64) []writeOp {
	ops := make([]writeOp, len(writes))
	for i, w := range writes {
		ops[i] = writeOp{item: writeItem(ref, w, exp)}
	}
	return ops
}
