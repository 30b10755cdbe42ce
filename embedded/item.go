package embedded

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/saver-dev/saver"
)

var _ saver.ItemStore = (*Store)(nil)

// Batch runs a batch of item ops: every read in one read transaction, so
// that they see one state, then the puts and the TTL refreshes of what was
// read in one write transaction, all or nothing. A writer between the two
// is ordered between the batch's reads and its writes, as if it had run
// there.
func (s *Store) Batch(ctx context.Context, tenant string, ops []saver.ItemOp) ([]saver.ItemResult, error) {
	results := make([]saver.ItemResult, len(ops))
	var refresh [][]byte // keys of items read with a refresh asked for
	puts := map[string]int{}
	var order []string // keys put, in the order of their last put
	reads := 0
	for i, op := range ops {
		if p, ok := op.(saver.PutOp); !ok {
			reads++
		} else {
			k := string(itemKey(tenant, p.Namespace, p.Key))
			if _, seen := puts[k]; seen {
				order = deleteString(order, k)
			}
			puts[k] = i
			order = append(order, k)
		}
	}
	now := s.Now()
	// A batch of puts alone reads nothing, and opens no read transaction
	// (closing a Pebble snapshot schedules compactions: a profile of puts
	// showed it).
	if reads > 0 {
		if err := s.readItems(ctx, tenant, ops, results, now, &refresh); err != nil {
			return results, err
		}
	}
	if len(puts) == 0 && len(refresh) == 0 {
		return results, nil
	}
	err := s.update(ctx, "item batch", func(tx kvTx) error {
		b, vb, eb := tx.Bucket(bucketItems), tx.Bucket(bucketItemVectors), tx.Bucket(bucketItemExpiry)
		for _, k := range refresh {
			if _, put := puts[string(k)]; put {
				continue // the put sets the expiry
			}
			if err := refreshItem(b, eb, k, now); err != nil {
				return err
			}
		}
		for _, k := range order {
			if err := putItem(b, vb, eb, []byte(k), ops[puts[k]].(saver.PutOp), now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// readItems runs the batch's reads (gets, searches, listings) in one read
// transaction, so that they see one state, into results; refresh gets the
// keys of the items read with a refresh asked for.
func (s *Store) readItems(ctx context.Context, tenant string, ops []saver.ItemOp, results []saver.ItemResult, now time.Time, refresh *[][]byte) error {
	return s.view(ctx, "item batch", func(tx kvTx) error {
		b := tx.Bucket(bucketItems)
		for i, op := range ops {
			var err error
			switch op := op.(type) {
			case saver.GetOp:
				results[i].Item, err = getItem(ctx, b, tenant, op, now, refresh)
			case *saver.SearchOp:
				results[i].Items, err = searchItems(ctx, b, tx.Bucket(bucketItemVectors), tenant, op, now, refresh)
			case saver.ListNamespacesOp:
				results[i].Namespaces, err = listNamespaces(ctx, b, tenant, op, now)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func deleteString(l []string, s string) []string {
	for i, x := range l {
		if x == s {
			return append(l[:i], l[i+1:]...)
		}
	}
	return l
}

// liveItem returns the record under k, or ok false if there is none or it
// has expired at now.
func liveItem(b kvBucket, k []byte, now time.Time) (itemRecord, bool, error) {
	v := b.Get(k)
	if v == nil {
		return itemRecord{}, false, nil
	}
	r, err := decodeItem(v)
	if err != nil {
		return r, false, fmt.Errorf("item %q: %w", k, err)
	}
	return r, !r.expired(now), nil
}

func getItem(ctx context.Context, b kvBucket, tenant string, op saver.GetOp, now time.Time, refresh *[][]byte) (*saver.Item, error) {
	k := itemKey(tenant, op.Namespace, op.Key)
	r, ok, err := liveItem(b, k, now)
	if !ok {
		return nil, err
	}
	// The answer holds the value: charged to the response budget first.
	if err := saver.Take(ctx, int64(len(r.value))); err != nil {
		return nil, err
	}
	if op.RefreshTTL && r.ttl > 0 {
		*refresh = append(*refresh, k)
	}
	it := r.item(op.Namespace, op.Key)
	return &it, nil
}

// searchItems reads every item under the prefix, the header of each, its
// vectors when the search has a query (from vb, walked beside b) and its
// value only when a filter needs it, and keeps the first offset+limit in a
// top-k selection of keys; only the page returned is read in full.
func searchItems(ctx context.Context, b, vb kvBucket, tenant string, op *saver.SearchOp, now time.Time, refresh *[][]byte) ([]saver.Item, error) {
	if op.Limit == 0 {
		return []saver.Item{}, nil // nothing to read for, as on DynamoDB
	}
	prefix := nsKey(tenant, op.Prefix)
	_, tenantRest, _ := nextComponent(prefix)
	skip := len(prefix) - len(tenantRest) // the tenant component
	top := saver.NewTopK(op.Offset + op.Limit)
	var scorer *itemScorer
	if op.Query != nil {
		scorer = &itemScorer{query: saver.NewQuery(op.Query), vectors: newVectorReader(vb, prefix)}
	}
	filter := op.ItemFilter()
	err := scanPrefix(ctx, b, prefix, func(k, v []byte) error {
		r, err := decodeItem(v)
		if err != nil {
			return fmt.Errorf("item %q: %w", k, err)
		}
		if r.expired(now) {
			return nil
		}
		h := saver.Hit{UpdatedAt: time.Unix(0, r.updatedAt)}
		if scorer != nil {
			score, ok, err := scorer.score(k, &r)
			if err != nil || !ok {
				return err
			}
			h.Score = &score
		}
		// Most items lose on score or time alone, or fail the filter: both
		// judged before the key is parsed (many items of a namespace share
		// an update time, a batch's).
		if !top.Would(h) {
			return nil
		}
		if ok, err := filter.Match(r.value); err != nil || !ok {
			return err
		}
		if h.Namespace, h.Key, err = parseItemKey(k[skip:]); err != nil {
			return fmt.Errorf("item key %q: %w", k, err)
		}
		if !top.Would(h) {
			return nil
		}
		h.Ref = bytes.Clone(k)
		top.Offer(h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	hits := top.Sorted()
	if op.Offset >= len(hits) {
		return []saver.Item{}, nil
	}
	return readHits(ctx, b, hits[op.Offset:], op.RefreshTTL, refresh)
}

// itemScorer scores items against a search's query, reading the vectors
// of an item that keeps them apart from vb, walked beside the items.
type itemScorer struct {
	query   saver.Query
	vectors *vectorReader
}

// score returns the item's score; ok is false when it has no vector the
// query can score.
func (sc *itemScorer) score(k []byte, r *itemRecord) (score float64, ok bool, err error) {
	vs := r.vectors
	if r.vectorsApart() {
		if vs = sc.vectors.at(k); vs == nil {
			return 0, false, fmt.Errorf("item %q: %w: its vectors are missing", k, errBadItem)
		}
	}
	score, ok = sc.query.ScoreBytes(vs, r.n)
	return score, ok, nil
}

// readHits reads the page of a search in full, in the hits' order, and
// notes the keys whose TTL the search refreshes.
func readHits(ctx context.Context, b kvBucket, hits []saver.Hit, refreshTTL bool, refresh *[][]byte) ([]saver.Item, error) {
	items := make([]saver.Item, 0, len(hits))
	for _, h := range hits {
		r, err := decodeItem(b.Get(h.Ref))
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", h.Ref, err)
		}
		if err := saver.Take(ctx, int64(len(r.value))); err != nil {
			return nil, err
		}
		it := r.item(h.Namespace, h.Key)
		it.Score = h.Score
		items = append(items, it)
		if refreshTTL && r.ttl > 0 {
			*refresh = append(*refresh, h.Ref)
		}
	}
	return items, nil
}

// listNamespaces walks the namespaces under the conditions' fixed prefix in
// key order, which is the order returned, reading one live item of each
// and seeking past the rest: past a namespace's items to the namespaces
// under it, or, once a namespace truncated to MaxDepth is listed, past
// every namespace under that.
func listNamespaces(ctx context.Context, b kvBucket, tenant string, op saver.ListNamespacesOp, now time.Time) ([]saver.Namespace, error) {
	if op.Limit == 0 {
		return []saver.Namespace{}, nil
	}
	prefix := nsKey(tenant, op.FixedPrefix())
	_, tenantRest, _ := nextComponent(prefix)
	skip := len(prefix) - len(tenantRest)
	out := []saver.Namespace{}
	want := op.Offset + op.Limit
	c := b.Cursor()
	n := 0
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < want; n++ {
		if err := checkCtx(ctx, n); err != nil {
			return nil, err
		}
		r, err := decodeItem(v)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", k, err)
		}
		if r.expired(now) {
			k, v = c.Next()
			continue
		}
		ns, _, err := parseItemKey(k[skip:])
		if err != nil {
			return nil, fmt.Errorf("item key %q: %w", k, err)
		}
		next := append(nsKey(tenant, ns), sep+1) // past the namespace's own items
		if op.Matches(ns) {
			t := ns.Truncate(op.MaxDepth)
			out = append(out, t)
			if len(t) < len(ns) || len(t) == op.MaxDepth {
				next = prefixEnd(nsKey(tenant, t))
			}
		}
		k, v = c.Seek(next)
	}
	if op.Offset >= len(out) {
		return []saver.Namespace{}, nil
	}
	return out[op.Offset:], nil
}

// vectorReader reads the vectors of the items under a prefix from
// item_vectors, beside a scan of their records: both buckets hold their
// keys in the same order, so one cursor moving forward serves the scan.
type vectorReader struct {
	c    kvCursor
	k, v []byte
}

func newVectorReader(vb kvBucket, prefix []byte) *vectorReader {
	r := &vectorReader{c: vb.Cursor()}
	r.k, r.v = r.c.Seek(prefix)
	return r
}

// at returns the vectors under k, nil if there are none. Each call's k
// must follow the last one's: the cursor only moves forward.
func (r *vectorReader) at(k []byte) []byte {
	for r.k != nil && bytes.Compare(r.k, k) < 0 {
		r.k, r.v = r.c.Next()
	}
	if r.k == nil || !bytes.Equal(r.k, k) {
		return nil
	}
	return r.v
}

// refreshItem restarts the TTL of the live item under k.
func refreshItem(b, eb kvBucket, k []byte, now time.Time) error {
	v := b.Get(k)
	if v == nil {
		return nil
	}
	r, err := decodeItem(v)
	if err != nil || r.expired(now) || r.ttl == 0 {
		return err
	}
	exp := now.Add(time.Duration(r.ttl)).UnixNano()
	if err := eb.Delete(itemExpiryKey(r.expiresAt, k)); err != nil {
		return err
	}
	if err := b.Put(k, withItemExpiry(v, exp)); err != nil {
		return err
	}
	return eb.Put(itemExpiryKey(exp, k), []byte{})
}

// putItem stores or deletes the item under k, its record in b and its
// vectors in vb. A live item's created_at is kept; an expired one is
// replaced as if absent.
func putItem(b, vb, eb kvBucket, k []byte, op saver.PutOp, now time.Time) error {
	old, live, err := liveItem(b, k, now)
	if err != nil {
		return err
	}
	if old.expiresAt != 0 {
		if err := eb.Delete(itemExpiryKey(old.expiresAt, k)); err != nil {
			return err
		}
	}
	if old.vectorsApart() && (op.Value == nil || len(op.Vectors) == 0) {
		if err := vb.Delete(k); err != nil {
			return err
		}
	}
	if op.Value == nil {
		return b.Delete(k)
	}
	r := itemRecord{
		expiresAt: unixNanos(saver.ItemExpiry(now, op.TTL)),
		ttl:       int64(op.TTL),
		createdAt: now.UnixNano(),
		updatedAt: now.UnixNano(),
	}
	if live {
		r.createdAt = old.createdAt
	}
	if len(op.Vectors) > 0 {
		r.n, r.dims = len(op.Vectors), len(op.Vectors[0])
		if err := putVectors(vb, k, old, op.Vectors); err != nil {
			return err
		}
	}
	if err := b.Put(k, encodeItem(r, op.Value)); err != nil {
		return err
	}
	if r.expiresAt != 0 {
		return eb.Put(itemExpiryKey(r.expiresAt, k), []byte{})
	}
	return nil
}

// putVectors stores an item's vectors apart from its record, unless the
// same bytes are there already. An update that leaves the indexed text as it
// was (a new note, a counter) brings the same vectors again, and writing
// them anew took half a put's CPU in-process: the log, the memtable and the
// compactions that rewrite them (BenchmarkPutItem10k, 384 dims: 69 µs of
// CPU a put, 35 without a vector). Reading them back to compare costs a
// lookup in a bucket that searches read anyway.
func putVectors(vb kvBucket, k []byte, old itemRecord, vectors [][]float32) error {
	v := saver.EncodeVectors(vectors)
	if old.vectorsApart() && bytes.Equal(vb.Get(k), v) {
		return nil
	}
	return vb.Put(k, v)
}

// SweepItems deletes the items that have expired, through the expiry
// index, in transactions of at most sweepBatch items, and returns how many
// it deleted. Reads never return expired items; this gives their space
// back.
func (s *Store) SweepItems(ctx context.Context) (int, error) {
	total := 0
	for {
		deleted := 0
		more := false
		err := s.update(ctx, "sweep items", func(tx kvTx) error {
			now := s.Now()
			b, vb, eb := tx.Bucket(bucketItems), tx.Bucket(bucketItemVectors), tx.Bucket(bucketItemExpiry)
			limit := []byte(idxComponent(now.UnixNano() + 1)) // expired at now: expiry <= now
			var doomed [][]byte
			c := eb.Cursor()
			deleted, more = 0, false
			for k, _ := c.First(); k != nil && bytes.Compare(k, limit) < 0; k, _ = c.Next() {
				if len(doomed) == sweepBatch {
					more = true
					break
				}
				doomed = append(doomed, bytes.Clone(k))
			}
			for _, ek := range doomed {
				if err := eb.Delete(ek); err != nil {
					return err
				}
				ik := ek[idxBytes:]
				v := b.Get(ik)
				if v == nil {
					continue
				}
				r, err := decodeItem(v)
				if err != nil {
					return fmt.Errorf("item %q: %w", ik, err)
				}
				// Puts and refreshes move an item's entry with its expiry;
				// an entry that disagrees with its record is left over, and
				// the record is not this entry's to delete.
				if r.expired(now) && r.expiresAt == expiryOf(ek) {
					if err := b.Delete(ik); err != nil {
						return err
					}
					if r.vectorsApart() {
						if err := vb.Delete(ik); err != nil {
							return err
						}
					}
					deleted++
				}
			}
			return nil
		})
		total += deleted
		if err != nil || !more {
			return total, err
		}
	}
}

// expiryOf is the expiry an expiry index entry holds.
func expiryOf(ek []byte) int64 {
	at, _ := parseIdx(string(ek[:idxBytes]))
	return at
}
