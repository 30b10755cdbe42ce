package embedded_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

func TestItems(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		storetest.RunItems(t, func(t *testing.T, now func() time.Time) storetest.ItemStore {
			return open(t, embedded.WithNow(now))
		})
	})
}

// TestSweepItems checks that a sweep deletes exactly the expired items: not
// one whose TTL a refresh restarted, nor one put again without a TTL.
func TestSweepItems(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		clock := storetest.NewClock()
		s := open(t, embedded.WithNow(clock.Now))
		tenant, ns := storetest.NewTenant(), saver.Namespace{"n"}
		var ops []saver.ItemOp
		for _, k := range []string{"expires", "refreshed", "put-again", "forever"} {
			p := storetest.Put(ns, k, `{}`)
			if k != "forever" {
				p.TTL = time.Minute
			}
			ops = append(ops, p)
		}
		storetest.MustBatch(t, s, tenant, ops...)
		clock.Advance(30 * time.Second)
		storetest.MustBatch(t, s, tenant,
			saver.GetOp{Namespace: ns, Key: "refreshed", RefreshTTL: true},
			storetest.Put(ns, "put-again", `{}`))
		clock.Advance(30 * time.Second)
		n, err := s.SweepItems(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("SweepItems deleted %d items, want 1", n)
		}
		for _, k := range []string{"refreshed", "put-again", "forever"} {
			if storetest.MustGet(t, s, tenant, ns, k) == nil {
				t.Fatalf("%s is gone after the sweep", k)
			}
		}
		clock.Advance(time.Minute)
		if n, err := s.SweepItems(t.Context()); err != nil || n != 1 {
			t.Fatalf("second SweepItems = %d, %v; want the refreshed item", n, err)
		}
		if n, err := s.SweepItems(t.Context()); err != nil || n != 0 {
			t.Fatalf("third SweepItems = %d, %v; want nothing left", n, err)
		}
	})
}

// TestItemsVersion1 reads items whose records are of version 1, as stores
// wrote them before vectors moved to a bucket of their own, beside items of
// version 2 in the same namespace: gets, a filtered search and a semantic
// search find them as they were put; a put over one writes it anew, keeping
// its created_at; a sweep deletes an expired one.
func TestItemsVersion1(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		clock := storetest.NewClock()
		s := open(t, embedded.WithNow(clock.Now))
		tenant, ns := storetest.NewTenant(), saver.Namespace{"docs"}
		t0 := clock.Now()
		old := []struct {
			key     string
			vectors [][]float32
			value   string
			ttl     time.Duration
		}{
			{"a", [][]float32{{1, 0, 0}}, `{"tag": "x"}`, 0},
			{"b", [][]float32{{0, 1, 0}, {0.6, 0.8, 0}}, `{"tag": "y"}`, 0},
			{"c", nil, `{"tag": "x"}`, 0},
			{"e", [][]float32{{0.8, 0.6, 0}}, `{"tag": "x"}`, time.Minute},
		}
		for i, o := range old {
			at := t0.Add(time.Duration(i) * time.Second)
			var exp time.Time
			if o.ttl > 0 {
				exp = at.Add(o.ttl)
			}
			if err := s.PutItemV1(tenant, ns, o.key, exp, o.ttl, at.Add(-time.Hour), at, o.vectors, []byte(o.value)); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(10 * time.Second)
		storetest.MustBatch(t, s, tenant,
			storetest.Put(ns, "a2", `{"tag": "x"}`, []float32{0, 0.6, 0.8}),
			storetest.Put(ns, "d", `{"tag": "y"}`, []float32{0, 0, 1}))

		got := storetest.MustGet(t, s, tenant, ns, "b")
		if got == nil || string(got.Value) != `{"tag": "y"}` || !got.CreatedAt.Equal(t0.Add(time.Second-time.Hour)) || !got.UpdatedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("get b = %+v", got)
		}
		filtered := storetest.MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Filter: []byte(`{"tag": "x"}`)})
		wantSearch(t, "filtered", filtered, []string{"a2", "e", "c", "a"}, nil)
		semantic := func(t *testing.T, want []string, scores []float64) {
			t.Helper()
			got := storetest.MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: []float32{0, 1, 0}})
			wantSearch(t, "semantic", got, want, scores)
		}
		semantic(t, []string{"b", "a2", "e", "d", "a"}, []float64{1, 0.6, 0.6, 0, 0})

		// a again without vectors, b with new ones, a2 deleted.
		clock.Advance(time.Second)
		storetest.MustBatch(t, s, tenant,
			storetest.Put(ns, "a", `{"tag": "z"}`),
			storetest.Put(ns, "b", `{"tag": "y"}`, []float32{0, 0, 1}),
			saver.PutOp{Namespace: ns, Key: "a2"})
		if got := storetest.MustGet(t, s, tenant, ns, "a"); got == nil || !got.CreatedAt.Equal(t0.Add(-time.Hour)) || string(got.Value) != `{"tag": "z"}` {
			t.Fatalf("get a after the put = %+v, want created_at kept", got)
		}
		semantic(t, []string{"e", "b", "d"}, []float64{0.6, 0, 0})
		mustVectorKeys(t, s, 2) // b and d

		clock.Advance(time.Minute)
		if n, err := s.SweepItems(t.Context()); err != nil || n != 1 {
			t.Fatalf("SweepItems = %d, %v; want e", n, err)
		}
		semantic(t, []string{"b", "d"}, []float64{0, 0})
	})
}

// TestItemVectorsGoWithTheirItems checks that the vectors kept apart from
// an item's record go with it: a delete, a put without vectors and a sweep
// each remove them.
func TestItemVectorsGoWithTheirItems(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		clock := storetest.NewClock()
		s := open(t, embedded.WithNow(clock.Now))
		tenant, ns := storetest.NewTenant(), saver.Namespace{"n"}
		expiring := storetest.Put(ns, "expiring", `{}`, []float32{1, 0, 0})
		expiring.TTL = time.Minute
		storetest.MustBatch(t, s, tenant,
			storetest.Put(ns, "deleted", `{}`, []float32{1, 0, 0}),
			storetest.Put(ns, "unindexed", `{}`, []float32{1, 0, 0}, []float32{0, 1, 0}),
			storetest.Put(ns, "kept", `{}`, []float32{1, 0, 0}),
			expiring)
		mustVectorKeys(t, s, 4)
		storetest.MustBatch(t, s, tenant,
			saver.PutOp{Namespace: ns, Key: "deleted"},
			storetest.Put(ns, "unindexed", `{}`))
		mustVectorKeys(t, s, 2)
		clock.Advance(2 * time.Minute)
		if n, err := s.SweepItems(t.Context()); err != nil || n != 1 {
			t.Fatalf("SweepItems = %d, %v; want 1", n, err)
		}
		mustVectorKeys(t, s, 1)
		got := storetest.MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: []float32{1, 0, 0}})
		wantSearch(t, "semantic", got, []string{"kept"}, []float64{1})
	})
}

func mustVectorKeys(t *testing.T, s *embedded.Store, want int) {
	t.Helper()
	if n, err := s.ItemVectorKeys(); err != nil || n != want {
		t.Fatalf("item_vectors holds %d keys (%v), want %d", n, err, want)
	}
}

// wantSearch checks a search's keys, in order, and their scores when
// scores is given.
func wantSearch(t *testing.T, what string, items []saver.Item, keys []string, scores []float64) {
	t.Helper()
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("%s search = %v, want %v", what, got, keys)
	}
	for i, want := range scores {
		if s := items[i].Score; s == nil || math.Abs(*s-want) > 1e-6 {
			t.Fatalf("%s search: %s scores %v, want %v", what, keys[i], s, want)
		}
	}
}
