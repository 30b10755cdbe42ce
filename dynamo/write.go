package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/saver-dev/saver"
)

// PutWrites stores a task's writes in one request for up to 100 writes (a
// TransactWriteItems, or a single PutItem for one write). Writes with a
// negative idx (special channels) replace; the others are inserted only if
// absent or expired, so that a replayed task keeps its first writes, value
// and expiry. A replayed write fails its condition and cancels the
// transaction it shares, and the others go again without it: one more
// request per replay. No checkpoint has to exist: the items simply sort
// after where it will be.
func (s *Store) PutWrites(ctx context.Context, in saver.PutWrites) error {
	now := s.Now()
	ops := make([]writeOp, 0, len(in.Writes))
	for _, w := range in.Writes {
		it, err := s.writeItem(ctx, in.CheckpointRef, w, in.ExpiresAt)
		if err != nil {
			return fmt.Errorf("dynamo: put writes on %s: write %s/%d: %w", in.ID, w.TaskID, w.Idx, err)
		}
		op := writeOp{item: it}
		if !w.Upserts() {
			op.cond = absentOrExpired(now)
		}
		ops = append(ops, op)
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
