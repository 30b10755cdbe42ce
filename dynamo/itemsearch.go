package dynamo

import (
	"context"
	"time"

	"github.com/saver-dev/saver"
)

// shardHits is what a search keeps of one shard: its top hits and their
// items, by sort key.
type shardHits struct {
	top  *saver.TopK
	kept map[string]*storedItem
}

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
	shards := make([]shardHits, itemShards)
	n, err := eachShard(ctx, op.Prefix, func(ctx context.Context, i, shard int) error {
		sh := shardHits{top: saver.NewTopK(k), kept: map[string]*storedItem{}}
		shards[i] = sh
		keptLoads := 0 // bytes of the loaded values of sh.kept
		return s.queryItems(ctx, tenant, shard, op.Prefix, projection, func(raw item) error {
			si, err := decodeStoredItem(raw)
			if err != nil || si.expired(now) {
				return err
			}
			h := saver.Hit{Namespace: si.ns, Key: si.key, UpdatedAt: time.Unix(0, si.updated), Ref: []byte(si.sk)}
			if query != nil {
				score, ok := si.score(query)
				if !ok {
					return nil
				}
				h.Score = &score
			}
			if !sh.top.Would(h) {
				return nil
			}
			if f := op.ItemFilter(); f != nil {
				v, loaded, err := s.valueOf(ctx, si)
				if err != nil {
					return err
				}
				if ok, err := f.Match(v); err != nil || !ok {
					return err
				}
				if loaded && keptLoads+len(v) <= maxKeptLoads {
					si.loaded = v
					keptLoads += len(v)
				}
			}
			sh.top.Offer(h)
			sh.kept[si.sk] = si
			if len(sh.kept) > 2*k+64 {
				keep := map[string]*storedItem{}
				for _, h := range sh.top.Sorted() {
					keep[string(h.Ref)] = sh.kept[string(h.Ref)]
				}
				clear(sh.kept)
				keptLoads = 0
				for sk, si := range keep {
					sh.kept[sk] = si
					keptLoads += len(si.loaded)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	top := saver.NewTopK(k)
	kept := map[string]*storedItem{}
	for _, sh := range shards[:n] {
		for _, h := range sh.top.Sorted() {
			top.Offer(h)
			kept[string(h.Ref)] = sh.kept[string(h.Ref)]
		}
	}
	hits := top.Sorted()
	if op.Offset >= len(hits) {
		return []saver.Item{}, nil
	}
	var l loads
	items := make([]*saver.Item, 0, len(hits)-op.Offset)
	for _, h := range hits[op.Offset:] {
		si := kept[string(h.Ref)]
		it, err := si.result(&l)
		if err != nil {
			return nil, err
		}
		it.Score = h.Score
		items = append(items, it)
		if op.RefreshTTL && si.ttl > 0 {
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
