package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// PutWrites stores a task's writes in one request: its ordinary writes in
// one bundle item (see bundle.go), inserted if absent or expired, with its
// writes to special channels (negative idx), which replace, as items of
// their own beside it, with the tree index items of the errors and
// interrupts among them (treeindex.go), in one TransactWriteItems, so that
// the writes of a put are stored all together or not at all. The first
// write of each idx is kept, as a replayed task must keep its first
// writes: a task's first bundle against a checkpoint takes sequence
// number 0, and a put that finds it
// taken (a replay) puts the writes it lacks as the next, and so on; a
// replay of the same writes costs the one request that failed. No
// checkpoint has to exist: the items simply sort after where it will be.
// Each request checks that the checkpoint has no tombstone (tombstone.go),
// so it is a TransactWriteItems even for a bundle alone.
func (s *Store) PutWrites(ctx context.Context, in saver.PutWrites) error {
	// Dropped after the writes are stored, so that a history that read
	// the checkpoint before does not keep it (chainCache).
	defer s.chains.drop(chainKey{nsKey{partitionKey(in.Tenant, in.ThreadID), in.NS}, in.ID})
	var ordinary, specials []saver.Write
	for _, w := range in.Writes {
		if w.Upserts() {
			specials = append(specials, w)
		} else {
			ordinary = append(ordinary, w)
		}
	}
	ops := writeOps(in.CheckpointRef, specials, in.ExpiresAt)
	for i, w := range specials {
		if err := s.offload(ctx, in.Tenant, in.ThreadID, ops[i].Item, attrValue, w.Value, in.ExpiresAt); err != nil {
			return fmt.Errorf("dynamo: put writes on %s: write %s/%d: %w", in.ID, w.TaskID, w.Idx, err)
		}
	}
	flags, err := flagOps(ops, in.ExpiresAt) // treeindex.go
	if err != nil {
		return fmt.Errorf("dynamo: put writes on %s: %w", in.ID, err)
	}
	ops = append(ops, flags...)
	for seq := 0; ; seq++ {
		if seq == maxBundles {
			return fmt.Errorf("dynamo: put writes on %s: %w", in.ID,
				saver.Errorf(saver.ECONFLICT, "Task %s has put writes against this checkpoint %d times with writes the earlier ones lacked.", in.Writes[0].TaskID, maxBundles))
		}
		err := s.putWrites(ctx, in, ordinary, seq, ops)
		var taken *bundleTaken
		if !errors.As(err, &taken) {
			if err != nil {
				return fmt.Errorf("dynamo: put writes on %s: %w", in.ID, err)
			}
			return nil
		}
		rest := ordinary[:0:0]
		for _, w := range ordinary {
			if !taken.has[writeID{w.TaskID, w.Idx}] {
				rest = append(rest, w)
			}
		}
		ordinary = rest
		if len(ordinary) == 0 && len(specials) == 0 {
			return nil
		}
	}
}

// putWrites sends one request: the special writes' ops and a bundle of the
// ordinary writes. A bundle whose key is taken fails it with *bundleTaken.
func (s *Store) putWrites(ctx context.Context, in saver.PutWrites, ordinary []saver.Write, seq int, specials []awsx.WriteOp) error {
	// The tombstone check first (tombstone.go), then the special writes
	// and their index items, the bundle last.
	ops := append([]awsx.WriteOp{notBuried(in.CheckpointRef, s.Now())}, specials...)
	if len(ordinary) > 0 {
		op, err := s.bundle(ctx, in.CheckpointRef, ordinary, seq, in.ExpiresAt)
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	if len(ops) == 1 {
		return nil
	}
	if len(awsx.Chunks(ops)) > 1 {
		return saver.Errorf(saver.ETOOLARGE, "A put_writes keeps its writes to special channels (negative idx) in one transaction beside one item of its other writes, a check and an index item for each error or interrupt: at most %d items and %d MB; this one has %d items.",
			awsx.MaxTransactItems, awsx.MaxTransactBytes>>20, len(ops))
	}
	err := s.table.Transact(ctx, ops)
	var cf *awsx.CondFailed
	if !errors.As(err, &cf) {
		return err
	}
	if _, ok := cf.Items[0]; ok {
		return saver.CheckpointDeleted(in.CheckpointRef, saver.RoleWritesOwner)
	}
	old, ok := cf.Items[len(ops)-1]
	if len(ordinary) == 0 || !ok || old == nil || len(cf.Items) != 1 {
		return fmt.Errorf("unexpected condition failure on %d items: %w", len(cf.Items), err)
	}
	has, err := s.bundledIDs(ctx, old)
	if err != nil {
		return fmt.Errorf("bundle %s as stored: %w", getS(old, attrSK), err)
	}
	return &bundleTaken{sk: getS(old, attrSK), has: has}
}

// writeOps returns a put of each write's item, values inline.
func writeOps(ref saver.CheckpointRef, writes []saver.Write, exp int64) []awsx.WriteOp {
	ops := make([]awsx.WriteOp, len(writes))
	for i, w := range writes {
		ops[i] = awsx.WriteOp{Item: writeItem(ref, w, exp)}
	}
	return ops
}
