package dynamo

import (
	"context"
	"fmt"

	"github.com/saver-dev/saver"
)

// PutWrites stores a task's writes in one request for up to 100 writes (a
// TransactWriteItems, or a single PutItem/UpdateItem for one write). Writes
// with idx >= 0 are insert-if-absent updates, so a replayed task keeps its
// first writes without a failed condition cancelling the others; negative
// idx (special channels) replace. No checkpoint has to exist: the items
// simply sort after where it will be.
func (s *Store) PutWrites(ctx context.Context, in saver.PutWrites) error {
	exp := in.ExpiresAt
	ops := make([]writeOp, 0, len(in.Writes))
	for _, w := range in.Writes {
		it, err := s.writeItem(ctx, in.CheckpointRef, w, exp)
		if err != nil {
			return fmt.Errorf("dynamo: put writes on %s: write %s/%d: %w", in.ID, w.TaskID, w.Idx, err)
		}
		ops = append(ops, writeOp{item: it, keep: !w.Upserts()})
	}
	if err := s.transact(ctx, ops); err != nil {
		return fmt.Errorf("dynamo: put writes on %s: %w", in.ID, err)
	}
	return nil
}
