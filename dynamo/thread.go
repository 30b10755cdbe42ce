package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// threadItems reads every item of a thread: one Query per 1 MB page.
func (s *Store) threadItems(ctx context.Context, tenant, threadID string, projection ...string) ([]item, error) {
	return s.partitionItems(ctx, partitionKey(tenant, threadID), projection...)
}

// partitionItems reads every item of a partition: one Query per 1 MB page.
func (s *Store) partitionItems(ctx context.Context, pk string, projection ...string) ([]item, error) {
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(pk)},
	}
	project(&in.ProjectionExpression, &in.ExpressionAttributeNames, projection)
	var out []item
	err := s.table.Query(ctx, in, func(items []item) bool {
		out = append(out, items...)
		return true
	})
	return out, err
}

// project sets a projection of the named attributes, if any.
func project(expr **string, names *map[string]string, attrs []string) {
	if len(attrs) == 0 {
		return
	}
	*names = map[string]string{}
	refs := make([]string, len(attrs))
	for i, a := range attrs {
		refs[i] = fmt.Sprintf("#p%d", i)
		(*names)[refs[i]] = a
	}
	*expr = ptr(strings.Join(refs, ", "))
}

// keyAttrs are enough to delete an item in the right order.
var keyAttrs = []string{attrPK, attrSK, attrKind}

// deleteItems deletes items with BatchWriteItem, 25 per request, tree index
// and lifetimes items first, then checkpoints, writes and blobs: a crash
// part-way leaves writes or blobs no checkpoint shows, or checkpoints the
// tree does not (deleting again deletes them), never a checkpoint whose
// values are gone, a node in the tree that is not there, nor a lifetimes
// entry vouching for a deleted blob (a put would trust it, and a patch
// take the blob for its base).
func (s *Store) deleteItems(ctx context.Context, items []item) error {
	rank := map[string]int{itemIndex: 0, itemLifetimes: 0, itemCheckpoint: 1, itemWrite: 2, itemBlob: 3}
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b item) int { return rank[getS(a, attrKind)] - rank[getS(b, attrKind)] })
	defer func() { // after the deletes: a history read meanwhile does not keep them
		dropped := map[string]bool{}
		for _, it := range items {
			if pk := getS(it, attrPK); !dropped[pk] {
				dropped[pk] = true
				s.chains.dropThread(pk)
			}
		}
	}()
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item{attrPK: it[attrPK], attrSK: it[attrSK]}}}
	}
	return s.table.BatchWrite(ctx, reqs)
}

// DeleteThread deletes every item of the thread, then its offloaded
// payloads (in that order, so no item is left pointing at nothing). The
// checkpoints are tombstoned first (tombstone.go), and the puts that raced
// the deletion go last (buryStragglers).
func (s *Store) DeleteThread(ctx context.Context, tenant, threadID string) error {
	pk := partitionKey(tenant, threadID)
	items, err := s.threadItems(ctx, tenant, threadID, keyAttrs...)
	buried := map[string]bool{}
	if err == nil {
		err = s.buryCheckpoints(ctx, pk, items, buried)
	}
	if err == nil {
		err = s.deleteItems(ctx, items)
	}
	if err == nil {
		err = s.buryStragglers(ctx, pk, buried, nil, nil)
	}
	if err == nil { // those a pack listed after items were read (treepage.go)
		err = s.deleteAllPages(ctx, pk)
	}
	if err == nil && s.Offload != nil {
		err = s.Offload.DeleteThread(ctx, tenant, threadID)
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete thread %s: %w", threadID, err)
	}
	return nil
}

// buryCheckpoints tombstones the checkpoints among items of the thread
// partition pk, and adds their sort keys to buried.
func (s *Store) buryCheckpoints(ctx context.Context, pk string, items []item, buried map[string]bool) error {
	var sks []string
	for _, it := range items {
		if getS(it, attrKind) == itemCheckpoint {
			sks = append(sks, getS(it, attrSK))
		}
	}
	if err := s.bury(ctx, pk, sks); err != nil {
		return err
	}
	for _, sk := range sks {
		buried[sk] = true
	}
	return nil
}

// DeleteForRuns finds the tenant's checkpoints whose run_id is one of
// runIDs with a Scan (run_id is a top-level attribute for that) and deletes
// each with its writes. Offloaded payloads they leave unreferenced are for
// the sweeper. Before it deletes anything, it reads each thread concerned
// whole and refuses (ECONFLICT) when a checkpoint that stays needs one of
// them for its DeltaChannels (saver.Severs). Each checkpoint is tombstoned
// before it is deleted (tombstone.go), and the puts that raced the
// deletion go last (buryStragglers).
func (s *Store) DeleteForRuns(ctx context.Context, tenant string, runIDs []string) error {
	if len(runIDs) == 0 {
		return nil
	}
	runs := saver.NewRunSet(runIDs)
	in := &dynamodb.ScanInput{
		FilterExpression:          ptr("begins_with(PK, :t) AND #k = :cp AND attribute_exists(#r)"),
		ExpressionAttributeNames:  map[string]string{"#k": attrKind, "#r": attrRunID, "#pk": attrPK, "#ns": attrNS, "#id": attrID},
		ExpressionAttributeValues: item{":t": attrS(tenantPrefix(tenant)), ":cp": attrS(itemCheckpoint)},
		ProjectionExpression:      ptr("#pk, #ns, #id, #r"),
	}
	var found []item
	err := s.table.Scan(ctx, in, func(items []item) bool {
		for _, it := range items {
			if runs[getS(it, attrRunID)] {
				found = append(found, it)
			}
		}
		return true
	})
	var present map[string]map[string]bool
	if err == nil {
		present, err = s.checkRunChains(ctx, tenant, found)
	}
	// Their tree index entries leave the pages first (treepage.go).
	doomed := map[string]map[string]bool{} // pk -> checkpoint sort keys
	for _, cp := range found {
		pk := getS(cp, attrPK)
		if doomed[pk] == nil {
			doomed[pk] = map[string]bool{}
		}
		doomed[pk][checkpointKey(getS(cp, attrNS), getS(cp, attrID))] = true
	}
	for pk, sks := range doomed {
		if err != nil {
			break
		}
		_, err = s.dropFromPages(ctx, pk, func(e *indexEntry) bool { return sks[checkpointKey(e.NS, e.ID)] })
	}
	buried := map[string]map[string]bool{} // pk -> checkpoint sort keys
	for _, cp := range found {
		if err != nil {
			break
		}
		var items []item
		q := &dynamodb.QueryInput{
			KeyConditionExpression: ptr("PK = :pk AND begins_with(SK, :sk)"),
			ExpressionAttributeValues: item{
				":pk": cp[attrPK],
				":sk": attrS(checkpointKey(getS(cp, attrNS), getS(cp, attrID))),
			},
		}
		project(&q.ProjectionExpression, &q.ExpressionAttributeNames, keyAttrs)
		err = s.table.Query(ctx, q, func(page []item) bool {
			items = append(items, page...)
			return true
		})
		pk := getS(cp, attrPK)
		if buried[pk] == nil {
			buried[pk] = map[string]bool{}
		}
		if err == nil {
			err = s.buryCheckpoints(ctx, pk, items, buried[pk])
		}
		if err == nil {
			err = s.deleteItems(ctx, withIndexKeys(items))
		}
	}
	// The puts that raced the deletion, thread by thread.
	for pk, sks := range buried {
		if err != nil {
			break
		}
		err = s.buryStragglers(ctx, pk, sks, runs, present[pk])
		if err == nil { // and what a pack that raced the deletion listed
			_, err = s.dropFromPages(ctx, pk, func(e *indexEntry) bool { return sks[checkpointKey(e.NS, e.ID)] })
		}
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete for runs: %w", err)
	}
	return nil
}

// Prune deletes the threads (PruneDelete) or, for PruneKeepLatest, reads
// each thread whole and deletes everything but the newest live checkpoint
// of each namespace with the ancestors its DeltaChannels need (its
// saver.Chain), their writes, the blobs they point at and the namespace's
// blob lifetimes; then the offloaded payloads only the deleted items
// pointed at.
func (s *Store) Prune(ctx context.Context, tenant string, threadIDs []string, strategy saver.PruneStrategy) error {
	if err := strategy.Validate(); err != nil {
		return err
	}
	for _, id := range threadIDs {
		var err error
		if strategy == saver.PruneDelete {
			err = s.DeleteThread(ctx, tenant, id)
		} else {
			err = s.keepLatest(ctx, tenant, id)
		}
		if err != nil {
			return fmt.Errorf("dynamo: prune thread %s: %w", id, err)
		}
	}
	return nil
}

func (s *Store) keepLatest(ctx context.Context, tenant, threadID string) error {
	items, err := s.threadItems(ctx, tenant, threadID)
	if err != nil {
		return err
	}
	keep, err := s.kept(tenant, items)
	if err != nil {
		return err
	}
	keepIndex(keep)
	// The pages keep the entries of what is kept (treepage.go), before
	// and after the deletion.
	pk := partitionKey(tenant, threadID)
	gone := func(e *indexEntry) bool { return !keep[indexedKey(e.sk())] }
	pages, err := s.dropFromPages(ctx, pk, gone)
	if err != nil {
		return err
	}
	for _, id := range pages {
		keep[pageKey(id)] = true
	}
	var (
		drop     []item
		kept     = map[string]bool{}
		released []string
	)
	for _, it := range items {
		// Lifetimes items go: their entries may name blobs dropped here.
		// They only save reads, and the next put of each namespace reads
		// what it references and records it again.
		if keep[getS(it, attrSK)] {
			for _, r := range refs(it) {
				kept[r] = true
			}
			continue
		}
		drop = append(drop, it)
		released = append(released, refs(it)...)
	}
	if err := s.deleteItems(ctx, drop); err != nil {
		return err
	}
	if _, err := s.dropFromPages(ctx, pk, gone); err != nil {
		return err
	}
	// Offloaded keys are content-addressed, so a kept item may share one.
	released = slices.DeleteFunc(released, func(r string) bool { return kept[r] })
	if len(released) > 0 && s.Offload != nil {
		return s.Offload.Delete(ctx, released)
	}
	return nil
}

// kept returns the sort keys of the items of a thread that keep_latest
// keeps: the latest live checkpoint of each namespace, with the ancestors
// its DeltaChannels need (saver.Chain), the writes of all of them, the blobs
// they point at and the blobs those patch on.
func (s *Store) kept(tenant string, items []item) (map[string]bool, error) {
	latest := map[string]string{} // namespace -> newest checkpoint id
	for _, it := range items {
		if getS(it, attrKind) != itemCheckpoint || s.expired(getN(it, attrExpiresAt)) {
			continue
		}
		ns, id := getS(it, attrNS), getS(it, attrID)
		if cur, ok := latest[ns]; !ok || id > cur {
			latest[ns] = id
		}
	}
	chains, err := s.chainsOfItems(tenant, items)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}       // sort keys
	keptIDs := map[[2]string]bool{} // namespace, checkpoint id
	for ns, id := range latest {
		chain, err := chains.chain(ns, id)
		if err != nil {
			return nil, err
		}
		for _, id := range append(chain, id) {
			keep[checkpointKey(ns, id)] = true
			keptIDs[[2]string{ns, id}] = true
		}
	}
	for _, it := range items {
		switch getS(it, attrKind) {
		case itemCheckpoint:
			if keep[getS(it, attrSK)] {
				for ch, v := range stringMap(it[attrVersions]) {
					keep[blobKey(getS(it, attrNS), ch, v)] = true
				}
			}
		case itemWrite:
			if keptIDs[[2]string{getS(it, attrNS), getS(it, attrID)}] {
				keep[getS(it, attrSK)] = true
			}
		}
	}
	patches{s}.keepBases(items, keep)
	return keep, nil
}

// stringMap returns the string entries of a map attribute.
func stringMap(av types.AttributeValue) map[string]string {
	m, _ := av.(*types.AttributeValueMemberM)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m.Value))
	for k, v := range m.Value {
		if v, ok := v.(*types.AttributeValueMemberS); ok {
			out[k] = v.Value
		}
	}
	return out
}

// OffloadRefs returns the offloaded payload references the thread's live
// items hold. The s3offload sweeper calls it to know which objects are live:
// an object only expired items point at is swept like an orphan (reads hide
// those items, so nothing reads the object again). One Query per 1 MB page,
// projected on the references and expiries.
func (s *Store) OffloadRefs(ctx context.Context, tenant, threadID string) ([]string, error) {
	e := awsx.NewExpr("p")
	e.Text = strings.Join([]string{e.Path(attrBody, payloadRef), e.Path(attrValue, payloadRef), e.Name(attrExpiresAt)}, ", ")
	pk := partitionKey(tenant, threadID)
	if shard, ok := parseItemOwner(threadID); ok {
		pk = itemPartition(tenant, shard) // the Store's items of a shard
	}
	var out []string
	err := s.table.Query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(pk)},
		ExpressionAttributeNames:  e.Names,
		ProjectionExpression:      &e.Text,
	}, func(items []item) bool {
		for _, it := range items {
			if !s.expired(getN(it, attrExpiresAt)) {
				out = append(out, refs(it)...)
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: offload refs of thread %s: %w", threadID, err)
	}
	return out, nil
}

// checkRunChains reads each thread with checkpoints in found and fails
// when deleting them would sever a staying checkpoint's chain. It returns
// the sort keys of the checkpoints each thread had, by partition key.
func (s *Store) checkRunChains(ctx context.Context, tenant string, found []item) (map[string]map[string]bool, error) {
	type nsKey struct{ pk, ns string }
	doomed := map[nsKey]map[string]bool{}
	threads := map[string]bool{}
	var order []string
	for _, cp := range found {
		k := nsKey{getS(cp, attrPK), getS(cp, attrNS)}
		if doomed[k] == nil {
			doomed[k] = map[string]bool{}
		}
		doomed[k][getS(cp, attrID)] = true
		if !threads[k.pk] {
			threads[k.pk] = true
			order = append(order, k.pk)
		}
	}
	present := map[string]map[string]bool{}
	for _, pk := range order {
		items, err := s.partitionItems(ctx, pk)
		if err != nil {
			return nil, err
		}
		present[pk] = map[string]bool{}
		for _, it := range items {
			if getS(it, attrKind) == itemCheckpoint {
				present[pk][getS(it, attrSK)] = true
			}
		}
		chains, err := s.chainsOfItems(tenant, items)
		if err != nil {
			return nil, err
		}
		thread := ""
		for _, it := range items {
			if thread = getS(it, attrThread); thread != "" {
				break
			}
		}
		for ns := range chains.nodes {
			gone := doomed[nsKey{pk, ns}]
			if len(gone) == 0 {
				continue
			}
			if err := saver.Severs(thread, ns, gone, chains.children[ns], chains.lookup(ns)); err != nil {
				return nil, err
			}
		}
	}
	return present, nil
}
