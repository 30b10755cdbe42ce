package dynamo

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver"
)

// maxKeyRune is the largest code point: appended to a checkpoint's key it
// bounds every key of that checkpoint's writes, which continue with "w".
const maxKeyRune = "\U0010FFFF"

// ListCheckpoints lists by the narrowest read the filter allows:
//   - a thread and a namespace: one Query per page, backwards through the
//     namespace from the before/after bound, stopping at the limit;
//   - a thread in all namespaces, with a limit: its namespaces found with
//     one small Query each (see namespaces), each listed as above, and the
//     lists merged; past maxMergedNamespaces, as without a limit:
//   - a thread in all namespaces: the thread's checkpoints are read whole
//     (namespaces interleave in id order) and sorted in memory;
//   - every thread of a tenant: a Scan filtered to the tenant's partitions.
//     It reads the whole table and is meant for rare, administrative use.
//
// Values are then resolved for the listed checkpoints only.
func (s *Store) ListCheckpoints(ctx context.Context, f saver.ListFilter) ([]*saver.Tuple, error) {
	var (
		ps  []*partial
		err error
	)
	switch {
	case f.ThreadID != "" && f.NS != nil:
		ps, err = s.listNamespace(ctx, f)
	case f.ThreadID != "" && f.Limit > 0:
		ps, err = s.listThread(ctx, f)
	case f.ThreadID != "":
		ps, err = s.listUnordered(ctx, f, s.queryThread(f.Tenant, f.ThreadID))
	default:
		ps, err = s.listUnordered(ctx, f, s.scanTenant(f.Tenant))
	}
	if err != nil {
		return nil, fmt.Errorf("dynamo: list checkpoints: %w", err)
	}
	tuples, err := s.complete(ctx, f.Tenant, ps, false)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list checkpoints: %w", err)
	}
	return tuples, nil
}

// listNamespace walks one namespace of one thread backwards.
func (s *Store) listNamespace(ctx context.Context, f saver.ListFilter) ([]*partial, error) {
	ns := *f.NS
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :lo)"),
		ExpressionAttributeValues: item{":pk": attrS(partitionKey(f.Tenant, f.ThreadID)), ":lo": attrS(nsPrefix(ns))},
		ScanIndexForward:          ptr(false),
	}
	switch hi := upperBound(f); {
	case f.CheckpointID != "":
		in.ExpressionAttributeValues[":lo"] = attrS(checkpointKey(ns, f.CheckpointID))
	case hi != "":
		in.KeyConditionExpression = ptr("PK = :pk AND SK BETWEEN :lo AND :hi")
		in.ExpressionAttributeValues[":hi"] = attrS(hi)
	}
	if f.Limit > 0 && len(f.Metadata) == 0 {
		// Enough items for the checkpoints asked for and a few writes each;
		// more pages follow if not.
		in.Limit = ptr(int32(min(max(f.Limit*8, 32), 1000)))
	}
	var (
		w   = walker{tenant: f.Tenant, store: s}
		out []*partial
		err error
	)
	qerr := s.table.Query(ctx, in, func(items []item) bool {
		for _, it := range items {
			var p *partial
			if p, err = w.add(it); err != nil {
				return false
			}
			if p != nil && f.Matches(&p.tup.Checkpoint) {
				out = append(out, p)
				if f.Limit > 0 && len(out) == f.Limit {
					return false
				}
			}
		}
		return true
	})
	if qerr != nil {
		return nil, qerr
	}
	return out, err
}

// maxMergedNamespaces bounds the namespaces a limited thread-wide list
// merges. A thread with more (a subgraph called in a loop has a namespace
// per call) is read whole: past a few dozen, the small Queries cost more.
const maxMergedNamespaces = 32

// listThread lists a thread in all namespaces, up to f.Limit, by merging
// the limited lists of each of its namespaces.
func (s *Store) listThread(ctx context.Context, f saver.ListFilter) ([]*partial, error) {
	nss, ok, err := s.namespaces(ctx, f.Tenant, f.ThreadID, maxMergedNamespaces)
	if err != nil {
		return nil, err
	}
	if !ok {
		return s.listUnordered(ctx, f, s.queryThread(f.Tenant, f.ThreadID))
	}
	var out []*partial
	for _, ns := range nss {
		g := f
		g.NS = &ns
		ps, err := s.listNamespace(ctx, g)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	slices.SortFunc(out, func(a, b *partial) int { return saver.ComparePositions(a.tup.Position(), b.tup.Position()) })
	return out[:min(len(out), f.Limit)], nil
}

// namespaces returns the namespaces of a thread's checkpoints and writes,
// false if it has more than max. Each costs one Query of one item,
// projected on its namespace: the next key after every key of the last
// namespace found. Every byte of an escaped or hashed part is above sep+1,
// so nsPrefix(ns) with its last sep raised to sep+1 sorts after every key
// of ns and before the keys of any namespace that ns is a prefix of.
func (s *Store) namespaces(ctx context.Context, tenant, threadID string, max int) ([]string, bool, error) {
	pk := partitionKey(tenant, threadID)
	lo := threadCheckpointsPrefix()
	hi := kindCheckpoint + string(rune(sep+1)) // above every key of a checkpoint or write
	var out []string
	for len(out) <= max {
		in := &dynamodb.QueryInput{
			KeyConditionExpression:    ptr("PK = :pk AND SK BETWEEN :lo AND :hi"),
			ExpressionAttributeValues: item{":pk": attrS(pk), ":lo": attrS(lo), ":hi": attrS(hi)},
			Limit:                     ptr(int32(1)),
		}
		project(&in.ProjectionExpression, &in.ExpressionAttributeNames, []string{attrNS})
		var (
			ns    string
			found bool
		)
		err := s.table.Query(ctx, in, func(items []item) bool {
			if len(items) == 0 {
				return true
			}
			ns, found = getS(items[0], attrNS), true
			return false
		})
		if err != nil {
			return nil, false, err
		}
		if !found {
			return out, true, nil
		}
		out = append(out, ns)
		prefix := nsPrefix(ns)
		lo = prefix[:len(prefix)-1] + string(rune(sep+1))
	}
	return nil, false, nil
}

// upperBound returns the largest sort key a checkpoint passing f's before
// and after bounds can have in namespace *f.NS, "" for no bound. The filter
// is still applied to each checkpoint; the bound only saves reading.
func upperBound(f saver.ListFilter) string {
	var hi string
	if f.Before != "" {
		hi = beforeBound(*f.NS, f.Before)
	}
	if f.After != nil {
		// A checkpoint with the cursor's own id may still follow it (another
		// thread or namespace sorts after), so the bound includes that id.
		a := checkpointKey(*f.NS, f.After.ID) + maxKeyRune
		if hi == "" || a < hi {
			hi = a
		}
	}
	return hi
}

// pager calls fn with pages of items in no particular order.
type pager func(ctx context.Context, fn func([]item) bool) error

// queryThread reads every checkpoint and write of a thread.
func (s *Store) queryThread(tenant, threadID string) pager {
	return func(ctx context.Context, fn func([]item) bool) error {
		return s.table.Query(ctx, &dynamodb.QueryInput{
			KeyConditionExpression: ptr("PK = :pk AND begins_with(SK, :c)"),
			ExpressionAttributeValues: item{
				":pk": attrS(partitionKey(tenant, threadID)),
				":c":  attrS(threadCheckpointsPrefix()),
			},
		}, fn)
	}
}

// scanTenant reads every checkpoint and write of a tenant.
func (s *Store) scanTenant(tenant string) pager {
	return func(ctx context.Context, fn func([]item) bool) error {
		return s.table.Scan(ctx, &dynamodb.ScanInput{
			FilterExpression: ptr("begins_with(PK, :t) AND begins_with(SK, :c)"),
			ExpressionAttributeValues: item{
				":t": attrS(tenantPrefix(tenant)),
				":c": attrS(threadCheckpointsPrefix()),
			},
		}, fn)
	}
}

// listUnordered groups items read in any order into checkpoints with their
// writes, keeps those f matches, sorts them and applies the limit.
func (s *Store) listUnordered(ctx context.Context, f saver.ListFilter, pages pager) ([]*partial, error) {
	type cpID struct{ pk, ns, id string }
	var (
		cps    = map[cpID]item{}
		writes = map[cpID][]item{}
	)
	err := pages(ctx, func(items []item) bool {
		for _, it := range items {
			if s.expired(getN(it, attrExpiresAt)) {
				continue
			}
			id := cpID{getS(it, attrPK), getS(it, attrNS), getS(it, attrID)}
			switch getS(it, attrKind) {
			case itemCheckpoint:
				cps[id] = it
			case itemWrite:
				writes[id] = append(writes[id], it)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	var out []*partial
	for id, it := range cps {
		p, err := newPartial(f.Tenant, it, writes[id])
		if err != nil {
			return nil, err
		}
		if f.Matches(&p.tup.Checkpoint) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *partial) int { return saver.ComparePositions(a.tup.Position(), b.tup.Position()) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}
