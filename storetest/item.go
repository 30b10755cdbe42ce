package storetest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

// ItemStore is a store of LangGraph BaseStore items, with the clock the
// item contract drives.
type ItemStore = saver.ItemStore

type itemTest = clockTest[ItemStore]

// RunItems runs the contract of saver.ItemStore against the store open
// returns, with a clock per subtest as RunLedger has. Every subtest works in
// a tenant of its own.
func RunItems(t *testing.T, open func(t *testing.T, now func() time.Time) ItemStore) {
	runClockGroups(t, []group[itemTest]{
		{"Get", itemGetTests},
		{"Search", itemSearchTests},
		{"Vectors", itemVectorTests},
		{"ListNamespaces", itemListTests},
		{"TTL", itemTTLTests},
	}, open)
}

// ItemIndex is the index of the contract's vectors: three numbers each.
var ItemIndex = saver.Index{Dims: 3}

// MustBatch validates ops as the API does and runs them.
func MustBatch(tb testing.TB, s ItemStore, tenant string, ops ...saver.ItemOp) []saver.ItemResult {
	tb.Helper()
	if err := saver.ValidateItemOps(ops, ItemIndex); err != nil {
		tb.Fatalf("ValidateItemOps: %v", err)
	}
	res, err := s.Batch(tb.Context(), tenant, ops)
	if err != nil {
		tb.Fatalf("Batch: %v", err)
	}
	if len(res) != len(ops) {
		tb.Fatalf("Batch returned %d results for %d ops", len(res), len(ops))
	}
	return res
}

// Put returns a put of value (a JSON object) under ns and key.
func Put(ns saver.Namespace, key, value string, vectors ...[]float32) saver.PutOp {
	return saver.PutOp{Namespace: ns, Key: key, Value: []byte(value), Vectors: vectors}
}

// MustGet returns the item under ns and key, nil if there is none.
func MustGet(tb testing.TB, s ItemStore, tenant string, ns saver.Namespace, key string) *saver.Item {
	tb.Helper()
	return MustBatch(tb, s, tenant, saver.GetOp{Namespace: ns, Key: key})[0].Item
}

// MustSearch runs one search and returns its items.
func MustSearch(tb testing.TB, s ItemStore, tenant string, op saver.SearchOp) []saver.Item {
	tb.Helper()
	return MustBatch(tb, s, tenant, &op)[0].Items
}

// keysOf lists items as "label/label:key".
func keysOf(items []saver.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = strings.Join(it.Namespace, "/") + ":" + it.Key
	}
	return out
}

func wantKeys(tb testing.TB, what string, items []saver.Item, want ...string) {
	tb.Helper()
	if got := keysOf(items); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		tb.Fatalf("%s = %q, want %q", what, got, want)
	}
}

var itemGetTests = []itemTest{
	{"PutGet", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"users", "u1", "memories"}
		MustBatch(t, s, tenant, Put(ns, "k", `{"food": "pizza", "n": [1, {"x": null}]}`))
		it := MustGet(t, s, tenant, ns, "k")
		if it == nil || string(it.Value) != `{"food": "pizza", "n": [1, {"x": null}]}` {
			t.Fatalf("Get = %+v, want the value byte for byte", it)
		}
		if !it.CreatedAt.Equal(clock.Now()) || !it.UpdatedAt.Equal(clock.Now()) || it.Score != nil {
			t.Fatalf("times %v %v score %v, want %v and no score", it.CreatedAt, it.UpdatedAt, it.Score, clock.Now())
		}
		if MustGet(t, s, tenant, ns, "other") != nil || MustGet(t, s, tenant, saver.Namespace{"users", "u1"}, "k") != nil {
			t.Fatal("Get found an item that was never put")
		}
	}},
	{"UpdateKeepsCreatedAt", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		MustBatch(t, s, tenant, Put(ns, "k", `{"v": 1}`))
		created := clock.Now()
		clock.Advance(time.Minute)
		MustBatch(t, s, tenant, Put(ns, "k", `{"v": 2}`))
		it := MustGet(t, s, tenant, ns, "k")
		if string(it.Value) != `{"v": 2}` || !it.CreatedAt.Equal(created) || !it.UpdatedAt.Equal(clock.Now()) {
			t.Fatalf("after update: %s created %v updated %v; want v 2, created %v, updated %v", it.Value, it.CreatedAt, it.UpdatedAt, created, clock.Now())
		}
	}},
	{"Delete", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		MustBatch(t, s, tenant, Put(ns, "k", `{}`), Put(ns, "j", `{}`))
		MustBatch(t, s, tenant, saver.PutOp{Namespace: ns, Key: "k"}, saver.PutOp{Namespace: ns, Key: "never"})
		if MustGet(t, s, tenant, ns, "k") != nil || MustGet(t, s, tenant, ns, "j") == nil {
			t.Fatal("delete removed the wrong items")
		}
		clock.Advance(time.Minute)
		MustBatch(t, s, tenant, Put(ns, "k", `{}`))
		if it := MustGet(t, s, tenant, ns, "k"); !it.CreatedAt.Equal(clock.Now()) {
			t.Fatalf("a key put again after a delete kept created_at %v", it.CreatedAt)
		}
	}},
	{"BatchOrder", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		MustBatch(t, s, tenant, Put(ns, "a", `{"v": "old"}`))
		res := MustBatch(t, s, tenant,
			Put(ns, "a", `{"v": "first"}`),
			saver.GetOp{Namespace: ns, Key: "a"},
			Put(ns, "b", `{"v": "b"}`),
			&saver.SearchOp{Prefix: ns, Limit: 10},
			Put(ns, "a", `{"v": "last"}`),
			saver.ListNamespacesOp{Limit: 10},
			saver.GetOp{Namespace: ns, Key: "b"},
		)
		// Reads see the items as they were before the batch.
		if it := res[1].Item; it == nil || string(it.Value) != `{"v": "old"}` {
			t.Fatalf("get in the batch = %+v, want the value before it", it)
		}
		wantKeys(t, "search in the batch", res[3].Items, "n:a")
		if len(res[5].Namespaces) != 1 || res[6].Item != nil || res[0].Item != nil || res[2].Items != nil {
			t.Fatalf("results out of op order: %+v", res)
		}
		if it := MustGet(t, s, tenant, ns, "a"); string(it.Value) != `{"v": "last"}` {
			t.Fatalf("after the batch a = %s, want the last put", it.Value)
		}
		if MustGet(t, s, tenant, ns, "b") == nil {
			t.Fatal("b was not put")
		}
	}},
	{"Tenants", func(t *testing.T, s ItemStore, clock *Clock) {
		t1, t2, ns := NewTenant(), NewTenant(), saver.Namespace{"shared"}
		MustBatch(t, s, t1, Put(ns, "k", `{"t": 1}`))
		MustBatch(t, s, t2, Put(ns, "k", `{"t": 2}`))
		if string(MustGet(t, s, t1, ns, "k").Value) != `{"t": 1}` || string(MustGet(t, s, t2, ns, "k").Value) != `{"t": 2}` {
			t.Fatal("tenants see each other's items")
		}
		MustBatch(t, s, t2, saver.PutOp{Namespace: ns, Key: "k"})
		if MustGet(t, s, t1, ns, "k") == nil {
			t.Fatal("a delete in one tenant removed another's item")
		}
		if got := MustBatch(t, s, t2, saver.ListNamespacesOp{Limit: 10})[0].Namespaces; len(got) != 0 {
			t.Fatalf("tenant 2 lists %q", got)
		}
		wantKeys(t, "search of tenant 1", MustSearch(t, s, t1, saver.SearchOp{Limit: 10}), "shared:k")
	}},
	{"OddKeys", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant := NewTenant()
		ns := saver.Namespace{"a\x01b", "#!", "é"}
		keys := []string{"", "\x00", "\x01", "k\x00x", strings.Repeat("z", 300)}
		var ops []saver.ItemOp
		for i, k := range keys {
			ops = append(ops, Put(ns, k, fmt.Sprintf(`{"i": %d}`, i)))
		}
		MustBatch(t, s, tenant, ops...)
		for i, k := range keys {
			if it := MustGet(t, s, tenant, ns, k); it == nil || string(it.Value) != fmt.Sprintf(`{"i": %d}`, i) || it.Key != k {
				t.Fatalf("key %q: %+v", k, it)
			}
		}
		if got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10}); len(got) != len(keys) {
			t.Fatalf("search found %d of %d", len(got), len(keys))
		}
	}},
	{"LargeValue", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"big"}
		value := `{"text": "` + strings.Repeat("x", 400<<10) + `"}` // over DynamoDB's item size
		MustBatch(t, s, tenant, Put(ns, "k", value, []float32{1, 0, 0}))
		if it := MustGet(t, s, tenant, ns, "k"); it == nil || string(it.Value) != value {
			t.Fatal("a 400 KB value did not come back whole")
		}
		got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 1, Query: []float32{1, 0, 0}})
		if len(got) != 1 || string(got[0].Value) != value {
			t.Fatal("a search did not return the 400 KB value whole")
		}
	}},
}

var itemSearchTests = []itemTest{
	{"Prefix", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant := NewTenant()
		MustBatch(t, s, tenant,
			Put(saver.Namespace{"a"}, "1", `{}`),
			Put(saver.Namespace{"a", "b"}, "2", `{}`),
			Put(saver.Namespace{"a", "b", "c"}, "3", `{}`),
			Put(saver.Namespace{"ab"}, "4", `{}`),
			Put(saver.Namespace{"b", "a"}, "5", `{}`),
		)
		// One batch: one update time, so namespace then key order.
		wantKeys(t, "prefix a", MustSearch(t, s, tenant, saver.SearchOp{Prefix: saver.Namespace{"a"}, Limit: 10}), "a:1", "a/b:2", "a/b/c:3")
		wantKeys(t, "prefix a/b", MustSearch(t, s, tenant, saver.SearchOp{Prefix: saver.Namespace{"a", "b"}, Limit: 10}), "a/b:2", "a/b/c:3")
		wantKeys(t, "no prefix", MustSearch(t, s, tenant, saver.SearchOp{Limit: 10}), "a:1", "a/b:2", "a/b/c:3", "ab:4", "b/a:5")
		wantKeys(t, "prefix x", MustSearch(t, s, tenant, saver.SearchOp{Prefix: saver.Namespace{"x"}, Limit: 10}))
	}},
	{"NewestFirstAndPages", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		for _, k := range []string{"c", "a", "d", "b"} {
			MustBatch(t, s, tenant, Put(ns, k, `{}`))
			clock.Advance(time.Second)
		}
		MustBatch(t, s, tenant, Put(ns, "a", `{"updated": true}`))
		wantKeys(t, "all", MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10}), "n:a", "n:b", "n:d", "n:c")
		wantKeys(t, "limit 2 offset 1", MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 2, Offset: 1}), "n:b", "n:d")
		wantKeys(t, "offset past the end", MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 2, Offset: 4}))
		wantKeys(t, "limit 0", MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 0}))
	}},
	{"Filter", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		MustBatch(t, s, tenant,
			Put(ns, "1", `{"kind": "a", "n": 1, "meta": {"tag": "x", "deep": {"v": 1}}, "flag": true}`),
			Put(ns, "2", `{"kind": "b", "n": 2.5, "meta": {"tag": "y"}, "flag": 1}`),
			Put(ns, "3", `{"kind": "a", "n": "3", "list": [1, 2]}`),
			Put(ns, "4", `{"kind": "c"}`),
		)
		tests := []struct {
			filter string
			want   []string
		}{
			{`{"kind": "a"}`, []string{"n:1", "n:3"}},
			{`{"kind": "a", "n": 1}`, []string{"n:1"}},
			{`{"meta": {"tag": "x"}}`, []string{"n:1"}},
			{`{"meta": {"deep": {"v": {"$gte": 1}}}}`, []string{"n:1"}},
			{`{"n": {"$gt": 1}}`, []string{"n:2", "n:3"}},
			{`{"n": {"$gte": 1, "$lt": 3}}`, []string{"n:1", "n:2"}},
			{`{"n": {"$lte": 1}}`, []string{"n:1"}},
			{`{"kind": {"$ne": "a"}}`, []string{"n:2", "n:4"}},
			{`{"kind": {"$eq": "c"}}`, []string{"n:4"}},
			{`{"flag": 1}`, []string{"n:1", "n:2"}},
			{`{"flag": true}`, []string{"n:1", "n:2"}},
			{`{"missing": null}`, []string{"n:1", "n:2", "n:3", "n:4"}},
			{`{"list": [1, 2]}`, []string{"n:3"}},
			{`{"list": [1]}`, nil},
		}
		for _, tt := range tests {
			got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Filter: []byte(tt.filter)})
			wantKeys(t, tt.filter, got, tt.want...)
		}
		wantKeys(t, "filter with a page", MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 1, Offset: 1, Filter: []byte(`{"kind": "a"}`)}), "n:3")
	}},
}

func unit(x, y, z float32) []float32 { return []float32{x, y, z} }

func scoresOf(items []saver.Item) []float64 {
	out := make([]float64, len(items))
	for i, it := range items {
		if it.Score == nil {
			out[i] = math.NaN()
			continue
		}
		out[i] = *it.Score
	}
	return out
}

func wantScores(tb testing.TB, items []saver.Item, want ...float64) {
	tb.Helper()
	got := scoresOf(items)
	if len(got) != len(want) {
		tb.Fatalf("scores %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			tb.Fatalf("scores %v, want %v", got, want)
		}
	}
}

var itemVectorTests = []itemTest{
	{"Scores", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"docs"}
		MustBatch(t, s, tenant,
			Put(ns, "x", `{"t": "x"}`, unit(1, 0, 0)),
			Put(ns, "xy", `{"t": "xy"}`, unit(1, 1, 0)),
			Put(ns, "y", `{"t": "y"}`, unit(0, 2, 0)),
			Put(ns, "pooled", `{"t": ["-x", "z"]}`, unit(-1, 0, 0), unit(0, 0, 1)),
			Put(ns, "none", `{"t": "not indexed"}`),
		)
		got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: unit(1, 0, 0)})
		wantKeys(t, "ranked", got, "docs:x", "docs:xy", "docs:pooled", "docs:y")
		wantScores(t, got, 1, 1/math.Sqrt2, 0, 0)
		got = MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 2, Offset: 1, Query: unit(1, 0, 0)})
		wantKeys(t, "page", got, "docs:xy", "docs:pooled")
		got = MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: unit(1, 0, 0), Filter: []byte(`{"t": "y"}`)})
		wantKeys(t, "filtered", got, "docs:y")
		got = MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: unit(0, 0, -1)})
		wantScores(t, got, 0, 0, 0, 0) // pooled: max(0, -1)
	}},
	{"PutReplacesVectors", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"docs"}
		MustBatch(t, s, tenant, Put(ns, "a", `{}`, unit(1, 0, 0)), Put(ns, "b", `{}`, unit(0, 1, 0)))
		MustBatch(t, s, tenant, Put(ns, "a", `{}`, unit(0, 0, 1)), Put(ns, "b", `{"index": false}`))
		got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: unit(0, 0, 1)})
		wantKeys(t, "after new vectors", got, "docs:a")
		wantScores(t, got, 1)
	}},
	{"PutOfTheSameVectors", func(t *testing.T, s ItemStore, clock *Clock) {
		// An update that brings the vectors the item has (its indexed text
		// unchanged) keeps them and changes the rest; one that comes back
		// after the item expired, or was deleted, has them too.
		tenant, ns := NewTenant(), saver.Namespace{"docs"}
		MustBatch(t, s, tenant, Put(ns, "a", `{"n": 1}`, unit(1, 0, 0)), Put(ns, "b", `{"n": 1}`, unit(0, 1, 0)))
		clock.Advance(time.Second)
		MustBatch(t, s, tenant, Put(ns, "a", `{"n": 2}`, unit(1, 0, 0)), Put(ns, "b", `{"n": 2}`, unit(0, 1, 0), unit(1, 0, 0)))
		got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: unit(1, 0, 0)})
		wantKeys(t, "same and more vectors", got, "docs:a", "docs:b")
		wantScores(t, got, 1, 1)
		for _, it := range got {
			if string(it.Value) != `{"n": 2}` {
				t.Fatalf("%s: value %s, want the update's", it.Key, it.Value)
			}
		}
		MustBatch(t, s, tenant, Put(ns, "b", `{"n": 3}`, unit(0, 1, 0)))
		got = MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: unit(1, 0, 0)})
		wantKeys(t, "b back to one vector", got, "docs:a", "docs:b")
		wantScores(t, got, 1, 0)
		MustBatch(t, s, tenant, saver.PutOp{Namespace: ns, Key: "a"}) // a deletion
		MustBatch(t, s, tenant, Put(ns, "a", `{"n": 4}`, unit(1, 0, 0)))
		got = MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 1, Query: unit(1, 0, 0)})
		wantKeys(t, "put again after its deletion", got, "docs:a")
		wantScores(t, got, 1)
		exp := Put(ns, "c", `{"n": 1}`, unit(0, 0, 1))
		exp.TTL = time.Minute
		MustBatch(t, s, tenant, exp)
		clock.Advance(2 * time.Minute)
		MustBatch(t, s, tenant, Put(ns, "c", `{"n": 2}`, unit(0, 0, 1)))
		got = MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 1, Query: unit(0, 0, 1)})
		wantKeys(t, "put again after it expired", got, "docs:c")
		wantScores(t, got, 1)
	}},
	{"PrefixAndTenant", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, other := NewTenant(), NewTenant()
		MustBatch(t, s, tenant, Put(saver.Namespace{"u1"}, "k", `{}`, unit(1, 0, 0)), Put(saver.Namespace{"u2"}, "k", `{}`, unit(1, 0, 0)))
		MustBatch(t, s, other, Put(saver.Namespace{"u1"}, "k2", `{}`, unit(1, 0, 0)))
		got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: saver.Namespace{"u1"}, Limit: 10, Query: unit(1, 0, 0)})
		wantKeys(t, "prefix u1", got, "u1:k")
	}},
	{"TopKOfMany", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"many"}
		var ops []saver.ItemOp
		for i := range 500 {
			a := float64(i) / 500 * math.Pi / 2 // angle from the query, growing
			ops = append(ops, Put(ns, fmt.Sprintf("k%03d", i), `{}`, unit(float32(math.Cos(a)), float32(math.Sin(a)), 0)))
		}
		MustBatch(t, s, tenant, ops...)
		got := MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 3, Offset: 2, Query: unit(1, 0, 0)})
		wantKeys(t, "top 3 after 2", got, "many:k002", "many:k003", "many:k004")
	}},
}

var itemListTests = []itemTest{
	{"Conditions", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant := NewTenant()
		MustBatch(t, s, tenant,
			Put(saver.Namespace{"users", "u1", "memories"}, "k", `{}`),
			Put(saver.Namespace{"users", "u1", "memories"}, "k2", `{}`),
			Put(saver.Namespace{"users", "u1", "prefs"}, "k", `{}`),
			Put(saver.Namespace{"users", "u2", "memories"}, "k", `{}`),
			Put(saver.Namespace{"users"}, "k", `{}`),
			Put(saver.Namespace{"docs", "memories"}, "k", `{}`),
			Put(saver.Namespace{"usersx"}, "k", `{}`),
		)
		list := func(op saver.ListNamespacesOp) []string {
			if op.Limit == 0 {
				op.Limit = 100
			}
			var out []string
			for _, ns := range MustBatch(t, s, tenant, op)[0].Namespaces {
				out = append(out, strings.Join(ns, "/"))
			}
			return out
		}
		prefix := func(p ...string) saver.MatchCondition { return saver.MatchCondition{MatchType: "prefix", Path: p} }
		suffix := func(p ...string) saver.MatchCondition { return saver.MatchCondition{MatchType: "suffix", Path: p} }
		tests := []struct {
			name string
			op   saver.ListNamespacesOp
			want []string
		}{
			{"All", saver.ListNamespacesOp{}, []string{"docs/memories", "users", "users/u1/memories", "users/u1/prefs", "users/u2/memories", "usersx"}},
			{"Prefix", saver.ListNamespacesOp{Conditions: []saver.MatchCondition{prefix("users")}}, []string{"users", "users/u1/memories", "users/u1/prefs", "users/u2/memories"}},
			{"PrefixWildcard", saver.ListNamespacesOp{Conditions: []saver.MatchCondition{prefix("users", "*", "memories")}}, []string{"users/u1/memories", "users/u2/memories"}},
			{"Suffix", saver.ListNamespacesOp{Conditions: []saver.MatchCondition{suffix("memories")}}, []string{"docs/memories", "users/u1/memories", "users/u2/memories"}},
			{"SuffixWildcard", saver.ListNamespacesOp{Conditions: []saver.MatchCondition{suffix("u1", "*")}}, []string{"users/u1/memories", "users/u1/prefs"}},
			{"Both", saver.ListNamespacesOp{Conditions: []saver.MatchCondition{prefix("users"), suffix("memories")}}, []string{"users/u1/memories", "users/u2/memories"}},
			{"Depth1", saver.ListNamespacesOp{MaxDepth: 1}, []string{"docs", "users", "usersx"}},
			{"Depth2", saver.ListNamespacesOp{MaxDepth: 2, Conditions: []saver.MatchCondition{prefix("users")}}, []string{"users", "users/u1", "users/u2"}},
			{"Depth2Suffix", saver.ListNamespacesOp{MaxDepth: 2, Conditions: []saver.MatchCondition{suffix("prefs")}}, []string{"users/u1"}},
			{"Page", saver.ListNamespacesOp{Limit: 2, Offset: 1}, []string{"users", "users/u1/memories"}},
			{"PagePastEnd", saver.ListNamespacesOp{Limit: 2, Offset: 6}, nil},
			{"None", saver.ListNamespacesOp{Conditions: []saver.MatchCondition{prefix("nope")}}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := list(tt.op); !slices.Equal(got, tt.want) {
					t.Fatalf("ListNamespaces = %q, want %q", got, tt.want)
				}
			})
		}
	}},
}

var itemTTLTests = []itemTest{
	{"Expires", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		p := Put(ns, "short", `{}`, unit(1, 0, 0))
		p.TTL = time.Minute
		MustBatch(t, s, tenant, p, Put(ns, "forever", `{}`, unit(1, 0, 0)), Put(saver.Namespace{"gone"}, "k", `{}`))
		MustBatch(t, s, tenant, saver.PutOp{Namespace: saver.Namespace{"gone"}, Key: "k"})
		clock.Advance(time.Minute - time.Second)
		if MustGet(t, s, tenant, ns, "short") == nil {
			t.Fatal("expired before its TTL")
		}
		clock.Advance(time.Second)
		if MustGet(t, s, tenant, ns, "short") != nil {
			t.Fatal("get returned an expired item")
		}
		wantKeys(t, "search", MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10}), "n:forever")
		wantKeys(t, "vector search", MustSearch(t, s, tenant, saver.SearchOp{Prefix: ns, Limit: 10, Query: unit(1, 0, 0)}), "n:forever")
		p = Put(saver.Namespace{"only", "expired"}, "k", `{}`)
		p.TTL = time.Minute
		MustBatch(t, s, tenant, p)
		clock.Advance(time.Minute)
		if got := MustBatch(t, s, tenant, saver.ListNamespacesOp{Limit: 10})[0].Namespaces; len(got) != 1 || got[0][0] != "n" {
			t.Fatalf("list_namespaces = %q, want only the namespace with a live item", got)
		}
	}},
	{"RefreshOnRead", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		for _, k := range []string{"get", "search", "norefresh"} {
			p := Put(ns, k, fmt.Sprintf(`{"k": %q}`, k))
			p.TTL = time.Minute
			MustBatch(t, s, tenant, p)
		}
		clock.Advance(50 * time.Second)
		MustBatch(t, s, tenant,
			saver.GetOp{Namespace: ns, Key: "get", RefreshTTL: true},
			saver.GetOp{Namespace: ns, Key: "norefresh"},
			&saver.SearchOp{Prefix: ns, Limit: 10, RefreshTTL: true, Filter: []byte(`{"k": "search"}`)},
		)
		clock.Advance(50 * time.Second)
		if MustGet(t, s, tenant, ns, "norefresh") != nil {
			t.Fatal("an item read without refresh lived past its TTL")
		}
		for _, k := range []string{"get", "search"} {
			if MustGet(t, s, tenant, ns, k) == nil {
				t.Fatalf("%s: the refresh did not restart the TTL", k)
			}
		}
		clock.Advance(10 * time.Second)
		if MustGet(t, s, tenant, ns, "get") != nil {
			t.Fatal("refreshed item lived past its restarted TTL")
		}
	}},
	{"PutResetsTTL", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		p := Put(ns, "k", `{}`)
		p.TTL = time.Minute
		MustBatch(t, s, tenant, p)
		MustBatch(t, s, tenant, Put(ns, "k", `{"no": "ttl"}`))
		clock.Advance(time.Hour)
		if MustGet(t, s, tenant, ns, "k") == nil {
			t.Fatal("a put without TTL kept the earlier TTL")
		}
	}},
	{"ExpiredIsAbsentToPut", func(t *testing.T, s ItemStore, clock *Clock) {
		tenant, ns := NewTenant(), saver.Namespace{"n"}
		p := Put(ns, "k", `{}`)
		p.TTL = time.Minute
		MustBatch(t, s, tenant, p)
		clock.Advance(2 * time.Minute)
		MustBatch(t, s, tenant, saver.GetOp{Namespace: ns, Key: "k", RefreshTTL: true})
		if MustGet(t, s, tenant, ns, "k") != nil {
			t.Fatal("a refresh revived an expired item")
		}
		MustBatch(t, s, tenant, Put(ns, "k", `{}`))
		if it := MustGet(t, s, tenant, ns, "k"); !it.CreatedAt.Equal(clock.Now()) {
			t.Fatalf("a put over an expired item kept its created_at %v", it.CreatedAt)
		}
	}},
}
