//go:build integration

package dynamo_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestItems runs the Store's item contract on the shared table and bucket,
// each subtest on a store value of its own driven by its clock.
func TestItems(t *testing.T) {
	st := localstack.MustStore(t)
	storetest.RunItems(t, func(t *testing.T, now func() time.Time) storetest.ItemStore {
		return withClock(st.Store, now)
	})
}

// TestItemsOffloadEverything runs the item contract with a threshold of
// zero, so that every value goes through S3.
func TestItemsOffloadEverything(t *testing.T) {
	st := localstack.MustStore(t)
	st.Store.OffloadThreshold = 0
	storetest.RunItems(t, func(t *testing.T, now func() time.Time) storetest.ItemStore {
		return withClock(st.Store, now)
	})
}

// itemCounts pins the requests of the Store's items: a get is one GetItem,
// a put one write request, and a search or listing under a prefix of two
// labels one Query, however many items other namespaces of its shard hold;
// under a shorter prefix, one Query per shard.
func itemCounts(s *dynamo.Store) []countTest {
	clock := storetest.NewClock()
	c := withClock(s, clock.Now)
	tenant := storetest.NewTenant()
	mine := saver.Namespace{"users", "u1", "memories"}
	batch := func(t *testing.T, ops ...saver.ItemOp) []saver.ItemResult {
		t.Helper()
		return storetest.MustBatch(t, c, tenant, ops...)
	}
	search := func(prefix saver.Namespace, want int) func(t *testing.T) {
		return func(t *testing.T) {
			got := batch(t, &saver.SearchOp{Prefix: prefix, Limit: 100, Query: []float32{1, 0, 0}})[0].Items
			if len(got) != want {
				t.Fatalf("search %v found %d items, want %d", prefix, len(got), want)
			}
		}
	}
	list := func(prefix []string, want int) func(t *testing.T) {
		return func(t *testing.T) {
			op := saver.ListNamespacesOp{Limit: 100}
			if prefix != nil {
				op.Conditions = []saver.MatchCondition{{MatchType: saver.MatchPrefix, Path: prefix}}
			}
			if got := batch(t, op)[0].Namespaces; len(got) != want {
				t.Fatalf("list_namespaces %v = %v, want %d namespaces", prefix, got, want)
			}
		}
	}
	expiring := storetest.Put(mine, "ttl", `{}`)
	expiring.TTL = time.Minute
	return []countTest{
		{name: "ItemPut", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) {
			batch(t, storetest.Put(mine, "k", `{"v": 1}`, []float32{1, 0, 0}))
		}},
		{name: "ItemUpdate", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) {
			clock.Advance(time.Second)
			batch(t, storetest.Put(mine, "k", `{"v": 2}`, []float32{1, 0, 0}))
		}},
		{name: "ItemPutOffloaded", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) {
			batch(t, storetest.Put(mine, "big", `{"text": "`+strings.Repeat("x", 360<<10)+`"}`))
		}},
		{name: "ItemGet", want: requests{"GetItem": 1}, fn: func(t *testing.T) {
			if it := batch(t, saver.GetOp{Namespace: mine, Key: "k"})[0].Item; it == nil || string(it.Value) != `{"v": 2}` {
				t.Fatalf("get = %+v", it)
			}
		}},
		{name: "ItemGetRefresh", want: requests{"GetItem": 1, "UpdateItem": 1}, fn: func(t *testing.T) {
			batch(t, saver.GetOp{Namespace: mine, Key: "ttl", RefreshTTL: true})
		}, setup: func(t *testing.T) { batch(t, expiring) }},
		// DynamoDB has not deleted the expired item: the update that would
		// keep its created_at fails its condition, and a PutItem replaces it.
		{name: "ItemPutOverExpired", want: requests{"UpdateItem": 1, "PutItem": 1}, fn: func(t *testing.T) {
			batch(t, storetest.Put(mine, "ttl", `{}`))
		}, setup: func(t *testing.T) { clock.Advance(2 * time.Minute) }},
		{name: "ItemDelete", want: requests{"DeleteItem": 1}, fn: func(t *testing.T) {
			batch(t, saver.PutOp{Namespace: mine, Key: "ttl"})
		}},
		{name: "ItemPut100", want: requests{"TransactWriteItems": 1}, fn: func(t *testing.T) {
			var ops []saver.ItemOp
			for i := range 100 {
				ops = append(ops, storetest.Put(mine, fmt.Sprint("n", i), `{}`, []float32{0, 1, 0}))
			}
			batch(t, ops...)
		}},
		{name: "ItemSearchPrefix", want: requests{"Query": 1}, fn: search(mine, 100)},
		{name: "ItemListPrefix", want: requests{"Query": 1}, fn: list([]string{"users", "u1"}, 1)},
		// 4 MB of items in other namespaces of the same shard, and items of
		// other shards: the same single Query, which reads only the prefix.
		{name: "ItemSearchPrefixAmongOthers", want: requests{"Query": 1}, fn: search(mine, 100), setup: func(t *testing.T) {
			var ops []saver.ItemOp
			for i := range 40 {
				ops = append(ops, storetest.Put(saver.Namespace{"users", "u1", "other"}, fmt.Sprint(i), `{"text": "`+strings.Repeat("x", 100<<10)+`"}`, []float32{1, 0, 0}))
				ops = append(ops, storetest.Put(saver.Namespace{"docs", fmt.Sprint("d", i)}, "k", `{}`, []float32{1, 0, 0}))
			}
			batch(t, ops...)
		}},
		// A search without a query, filtered on the values: the same Query
		// (an offloaded value the filter must read is fetched from S3).
		{name: "ItemSearchFilterAmongOthers", want: requests{"Query": 1}, fn: func(t *testing.T) {
			got := batch(t, &saver.SearchOp{Prefix: mine, Limit: 10, Filter: []byte(`{"v": 2}`)})[0].Items
			if len(got) != 1 || got[0].Key != "k" {
				t.Fatalf("filtered search = %+v, want the item k", got)
			}
		}},
		{name: "ItemListMineAmongOthers", want: requests{"Query": 1}, fn: list([]string{"users", "u1", "memories"}, 1)},
		// A listing seeks past a namespace's items, here 4 MB of them: the
		// seek's Query finds the end.
		{name: "ItemListPrefixAmongOthers", want: requests{"Query": 2}, fn: list([]string{"users", "u1"}, 2)},
		// A prefix of one label fixes no shard: one Query per shard.
		{name: "ItemSearchOneLabel", want: requests{"Query": 16}, fn: search(saver.Namespace{"docs"}, 40)},
		{name: "ItemListOneLabel", want: requests{"Query": 16}, fn: list([]string{"docs"}, 40)},
	}
}

// TestItemSearchFilterLoadsOnce checks that a filtered search reads an
// offloaded value from S3 once: the value the filter read is the one
// returned, not loaded again for the answer.
func TestItemSearchFilterLoadsOnce(t *testing.T) {
	st := localstack.MustStore(t)
	tenant, ns := storetest.NewTenant(), saver.Namespace{"users", "u1", "docs"}
	big := `{"tag": "x", "text": "` + strings.Repeat("x", 360<<10) + `"}`
	storetest.MustBatch(t, st.Store, tenant,
		storetest.Put(ns, "big", big, []float32{1, 0, 0}),
		storetest.Put(ns, "small", `{"tag": "y"}`, []float32{1, 0, 0}))
	st.S3Requests.Reset()
	got := storetest.MustSearch(t, st.Store, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Filter: []byte(`{"tag": "x"}`)})
	if len(got) != 1 || got[0].Key != "big" || string(got[0].Value) != big {
		t.Fatalf("filtered search found %d items, want big with its value", len(got))
	}
	if n := st.S3Requests.Snapshot()["GetObject"]; n != 1 {
		t.Fatalf("the filtered search sent %d GetObject requests, want 1", n)
	}
}
