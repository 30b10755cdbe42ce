package dynamo

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// Tombstones (see saver's tombstone.go) have a partition per thread beside
// the thread's own, which no thread's can equal (its partition key has a
// part more), so that no read, copy, prune or deletion of the thread meets
// them, and a sort key that is no checkpoint's (a tenant's listing scans
// for those):
//
//	PK  <tenant>!~gone!<thread>!       SK  g!<checkpoint's sort key>
//
// with kind "tombstone", deleted_at and expires_at, which DynamoDB's TTL
// reaps; a condition reads an expired one as absent.
const (
	gonePart      = "~gone"
	kindGone      = "g"
	itemTombstone = "tombstone"
	attrDeletedAt = "deleted_at"
)

// goneKey is the key of the tombstone of the checkpoint whose sort key is
// sk in the thread partition pk.
func goneKey(pk, sk string) item {
	// pk is the tenant's part, then the thread's; the tombstones' part goes
	// between them.
	i := strings.IndexByte(pk, sep) + 1
	return item{attrPK: attrS(pk[:i] + key(gonePart) + pk[i:]), attrSK: attrS(key(kindGone) + sk)}
}

// notBuried is the check, in a put's or put_writes's transaction, that the
// checkpoint ref names has no live tombstone.
func notBuried(ref saver.CheckpointRef, now time.Time) awsx.WriteOp {
	return awsx.WriteOp{
		Item:  goneKey(partitionKey(ref.Tenant, ref.ThreadID), checkpointKey(ref.NS, ref.ID)),
		Check: true,
		Cond:  absentOrExpired(now),
	}
}

// bury writes the tombstones of the checkpoints whose sort keys are sks in
// the thread partition pk, 25 a BatchWriteItem. A tombstone written again
// starts its lifetime again.
func (s *Store) bury(ctx context.Context, pk string, sks []string) error {
	now := s.Now()
	exp := now.Add(s.TombstoneLifetime).Unix()
	reqs := make([]types.WriteRequest, len(sks))
	for i, sk := range sks {
		it := goneKey(pk, sk)
		it[attrKind] = attrS(itemTombstone)
		it[attrDeletedAt] = attrN(now.Unix())
		it[attrExpiresAt] = attrN(exp)
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return s.table.BatchWrite(ctx, reqs)
}

// straggler attributes: what buryStragglers reads of a thread's items.
var stragglerAttrs = []string{attrPK, attrSK, attrKind, attrNS, attrID, attrParent, attrRunID}

// maxStragglerPasses bounds the passes of buryStragglers: a writer that
// puts a step in every pass's window, between its read and its tombstones,
// keeps it going, and the deletion answers EUNAVAILABLE after so many
// (its tombstones stay; a retry finishes it).
const maxStragglerPasses = 64

// buryStragglers removes the puts that raced a deletion of the thread
// partition pk: it reads the thread, and deletes and tombstones every
// checkpoint that descends from one the deletion buried (buried: sort
// keys), with its writes, and the writes of every checkpoint it buried,
// all with their tree index items (treeindex.go), pass after pass until a
// pass finds no such checkpoint. Each passed its put's check before its
// parent's tombstone was written, so the read, made after, sees it; a put
// after finds the tombstone and is refused, so the passes end.
// DeleteForRuns passes the runs it deletes and the checkpoints the thread
// had when it began (present: sort keys): it keeps another run's
// checkpoint whose parent it deletes, so only a checkpoint of one of runs,
// or one that came during the deletion, is a straggler.
func (s *Store) buryStragglers(ctx context.Context, pk string, buried, runs, present map[string]bool) error {
	if len(buried) == 0 {
		return nil // no checkpoint deleted: nothing can descend from one
	}
	for pass := 0; ; pass++ {
		if pass == maxStragglerPasses {
			return saver.Errorf(saver.EUNAVAILABLE, "The deletion raced puts continuing what it deletes for %d passes; its tombstones hold, retry it.", pass)
		}
		items, err := s.partitionItems(ctx, pk, stragglerAttrs...)
		if err != nil {
			return err
		}
		parents := map[string]string{} // sort key -> its parent's
		for _, it := range items {
			if getS(it, attrKind) != itemCheckpoint || getS(it, attrParent) == "" {
				continue
			}
			sk := getS(it, attrSK)
			if present[sk] && !runs[getS(it, attrRunID)] {
				continue
			}
			parents[sk] = checkpointKey(getS(it, attrNS), getS(it, attrParent))
		}
		var doomed []string
		for changed := true; changed; {
			changed = false
			for sk, parent := range parents {
				if !buried[sk] && buried[parent] {
					buried[sk], changed = true, true
					doomed = append(doomed, sk)
				}
			}
		}
		if err := s.bury(ctx, pk, doomed); err != nil {
			return err
		}
		var gone []item
		for _, it := range items {
			switch getS(it, attrKind) {
			case itemCheckpoint, itemWrite:
				if buried[checkpointKey(getS(it, attrNS), getS(it, attrID))] {
					gone = append(gone, it)
				}
			}
		}
		if err := s.deleteItems(ctx, withIndexKeys(gone)); err != nil || len(doomed) == 0 {
			return err
		}
	}
}
