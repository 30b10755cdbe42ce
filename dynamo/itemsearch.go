package dynamo

import (
	"context"
	"time"

	"github.com/saver-dev/saver"
)

// searchItems reads every item under the prefix, in its shard or in every
// shard when the prefix has fewer labels than choose one, and keeps the
// first offset+limit in a top-k selection per shard, then overall. Without
// a query it reads no vectors. A filter reads an offloaded value from S3,
// kept for the answer (up to maxKeptLoads a shard); the rest of the page
// returned is loaded at the end.
func (s *Store) searchItems(ctx context.Context, tenant string, op *saver.SearchOp, now time.Time, refresh *[]*storedItem) ([]saver.Item, error) {
	k := op.Offset + op.Limit
	if op.Limit == 0 {
		return []saver.Item{}, nil
	}
	var query *saver.Query
	if op.Query != nil {
		q := saver.NewQuery(op.Query)
		query = &q
	}
	var projection []string
	if query == nil {
		projection = itemAttrsButVectors
	}
	shards := make([]*shardHits, itemShards)
	n, err := eachShard(ctx, op.Prefix, func(ctx context.Context, i, shard int) error {
		sh := &shardHits{k: k, top: saver.NewTopK(k), kept: map[string]*storedItem{}}
		shards[i] = sh
		return s.queryItems(ctx, tenant, shard, op.Prefix, projection, func(raw item) error {
			return s.offerItem(ctx, sh, raw, op.ItemFilter(), query, now)
		})
	})
	if err != nil {
		return nil, err
	}
	hits, kept := topOfShards(shards[:n], k)
	if op.Offset >= len(hits) {
		return []saver.Item{}, nil
	}
	return s.searchPage(ctx, hits[op.Offset:], kept, op.RefreshTTL, refresh)
}

// shardHits is what a search keeps of one shard: its top k hits and their
// items, by sort key.
type shardHits struct {
	k     int
	top   *saver.TopK
	kept  map[string]*storedItem
	loads int // bytes of the loaded values of kept
}

// offerItem takes one item of a shard into its top hits if it makes them:
// live, scored when the search has a query, and matching the filter f (nil
// for none). The cheap checks go first, so that a value is read from S3
// for the filter only when the hit would be kept.
func (s *Store) offerItem(ctx context.Context, sh *shardHits, raw item, f *saver.ItemFilter, query *saver.Query, now time.Time) error {
	si, err := decodeStoredItem(raw)
	if err != nil || si.expired(now) {
		return err
	}
	h, ok := si.hit(query)
	if !ok || !sh.top.Would(h) {
		return nil
	}
	if f != nil {
		if ok, err := s.filterMatches(ctx, sh, si, f); err != nil || !ok {
			return err
		}
	}
	sh.keep(h, si)
	return nil
}

// hit returns the item as a search hit, scored against query when there is
// one; false when the item has no score for it (no vector to compare).
func (si *storedItem) hit(query *saver.Query) (saver.Hit, bool) {
	h := saver.Hit{Namespace: si.ns, Key: si.key, UpdatedAt: time.Unix(0, si.updated), Ref: []byte(si.sk)}
	if query != nil {
		score, ok := si.score(query)
		if !ok {
			return h, false
		}
		h.Score = &score
	}
	return h, true
}

// filterMatches reports whether si's value matches f, reading the value
// from S3 when it is offloaded. A value read stays with the item for the
// answer while the shard's kept values fit in maxKeptLoads, so that a hit
// the page returns is not read twice.
func (s *Store) filterMatches(ctx context.Context, sh *shardHits, si *storedItem, f *saver.ItemFilter) (bool, error) {
	v, loaded, err := s.valueOf(ctx, si)
	if err != nil {
		return false, err
	}
	if ok, err := f.Match(v); err != nil || !ok {
		return false, err
	}
	if loaded && sh.loads+len(v) <= maxKeptLoads {
		si.loaded = v
		sh.loads += len(v)
	}
	return true, nil
}

// keep offers hit h to the shard's top and keeps its item. Once over 2k+64
// items are kept, those the top has dropped since are let go of: a shard
// holds about its top's items and values, whatever its size.
func (sh *shardHits) keep(h saver.Hit, si *storedItem) {
	sh.top.Offer(h)
	sh.kept[si.sk] = si
	if len(sh.kept) > 2*sh.k+64 {
		sh.prune()
	}
}

// prune keeps only the items of the top's hits, and counts their loaded
// values again.
func (sh *shardHits) prune() {
	keep := map[string]*storedItem{}
	for _, h := range sh.top.Sorted() {
		keep[string(h.Ref)] = sh.kept[string(h.Ref)]
	}
	clear(sh.kept)
	sh.loads = 0
	for sk, si := range keep {
		sh.kept[sk] = si
		sh.loads += len(si.loaded)
	}
}

// topOfShards returns the first k hits of all the shards, in order, and
// their items by sort key.
func topOfShards(shards []*shardHits, k int) ([]saver.Hit, map[string]*storedItem) {
	top := saver.NewTopK(k)
	kept := map[string]*storedItem{}
	for _, sh := range shards {
		for _, h := range sh.top.Sorted() {
			top.Offer(h)
			kept[string(h.Ref)] = sh.kept[string(h.Ref)]
		}
	}
	return top.Sorted(), kept
}

// searchPage returns the items of the page's hits with their scores: the
// values a filter loaded as they are, the other offloaded ones fetched
// together, each charged to the response budget. With refreshTTL, the
// items that have a TTL go to refresh.
func (s *Store) searchPage(ctx context.Context, hits []saver.Hit, kept map[string]*storedItem, refreshTTL bool, refresh *[]*storedItem) ([]saver.Item, error) {
	var l loads
	items := make([]*saver.Item, 0, len(hits))
	for _, h := range hits {
		si := kept[string(h.Ref)]
		it, err := si.result(&l)
		if err != nil {
			return nil, err
		}
		it.Score = h.Score
		items = append(items, it)
		if refreshTTL && si.ttl > 0 {
			*refresh = append(*refresh, si)
		}
	}
	if err := s.fetch(ctx, &l); err != nil {
		return nil, err
	}
	out := make([]saver.Item, len(items))
	for i, it := range items {
		if err := saver.Take(ctx, int64(len(it.Value))); err != nil {
			return nil, err
		}
		out[i] = *it
	}
	return out, nil
}
