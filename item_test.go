package saver_test

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

func TestMatchCondition(t *testing.T) {
	ns := saver.Namespace{"users", "u1", "memories"}
	tests := []struct {
		c    saver.MatchCondition
		want bool
	}{
		{saver.MatchCondition{MatchType: "prefix", Path: nil}, true},
		{saver.MatchCondition{MatchType: "prefix", Path: []string{"users"}}, true},
		{saver.MatchCondition{MatchType: "prefix", Path: []string{"users", "*", "memories"}}, true},
		{saver.MatchCondition{MatchType: "prefix", Path: []string{"*", "u2"}}, false},
		{saver.MatchCondition{MatchType: "prefix", Path: []string{"users", "u1", "memories", "x"}}, false},
		{saver.MatchCondition{MatchType: "suffix", Path: []string{"memories"}}, true},
		{saver.MatchCondition{MatchType: "suffix", Path: []string{"u1", "*"}}, true},
		{saver.MatchCondition{MatchType: "suffix", Path: []string{"users"}}, false},
		{saver.MatchCondition{MatchType: "suffix", Path: []string{"*", "*", "*", "*"}}, false},
	}
	for _, tt := range tests {
		if got := tt.c.Matches(ns); got != tt.want {
			t.Errorf("%s %q: Matches = %v, want %v", tt.c.MatchType, tt.c.Path, got, tt.want)
		}
	}
}

func TestFixedPrefix(t *testing.T) {
	op := saver.ListNamespacesOp{Conditions: []saver.MatchCondition{
		{MatchType: "suffix", Path: []string{"a", "b", "c"}},
		{MatchType: "prefix", Path: []string{"users", "*", "x"}},
		{MatchType: "prefix", Path: []string{"users", "u1", "*"}},
	}}
	if got := op.FixedPrefix(); strings.Join(got, "/") != "users/u1" {
		t.Fatalf("FixedPrefix = %q, want [users u1]", got)
	}
}

func TestNamespaceCompare(t *testing.T) {
	// Python: sorted([("a","b"), ("a",), ("ab",), ("a","b","c"), ("B",)])
	want := []saver.Namespace{{"B"}, {"a"}, {"a", "b"}, {"a", "b", "c"}, {"ab"}}
	for i := 1; i < len(want); i++ {
		if c := want[i-1].Compare(want[i]); c >= 0 {
			t.Errorf("%q.Compare(%q) = %d, want < 0", want[i-1], want[i], c)
		}
	}
}

func TestValidateItemOps(t *testing.T) {
	long := strings.Repeat("!", saver.MaxLabelKeyBytes/3+1)
	ns := saver.Namespace{"users", "u1"}
	obj := []byte(`{"a":1}`)
	tests := []struct {
		name      string
		op        saver.ItemOp
		inMessage string
	}{
		{"EmptyNamespace", saver.GetOp{Key: "k"}, "namespace is empty"},
		{"EmptyLabel", saver.GetOp{Namespace: saver.Namespace{"a", ""}, Key: "k"}, "namespace[1] is an empty label"},
		{"DotLabel", saver.PutOp{Namespace: saver.Namespace{"a.b"}, Key: "k", Value: obj}, "namespace[0]"},
		{"NULLabel", saver.PutOp{Namespace: saver.Namespace{"a\x00"}, Key: "k", Value: obj}, "NUL"},
		{"LabelKeyBytes", saver.PutOp{Namespace: saver.Namespace{long}, Key: "k", Value: obj}, "namespace[0] takes"},
		{"NamespaceKeyBytes", saver.PutOp{Namespace: saver.Namespace{strings.Repeat("a", 200), strings.Repeat("b", 200), strings.Repeat("c", 200)}, Key: "k", Value: obj}, "namespace takes"},
		{"KeyBytes", saver.PutOp{Namespace: ns, Key: strings.Repeat(" ", 129), Value: obj}, "key takes"},
		{"Reserved", saver.PutOp{Namespace: saver.Namespace{"langgraph"}, Key: "k", Value: obj}, "reserved"},
		{"ValueNotObject", saver.PutOp{Namespace: ns, Key: "k", Value: []byte(`[1]`)}, "value must be a JSON object"},
		{"ValueNotJSON", saver.PutOp{Namespace: ns, Key: "k", Value: []byte(`{`)}, "value is not valid JSON"},
		{"VectorLength", saver.PutOp{Namespace: ns, Key: "k", Value: obj, Vectors: [][]float32{{1, 2}}}, "vectors[0] has 2 dims; the index has 3"},
		{"VectorNaN", saver.PutOp{Namespace: ns, Key: "k", Value: obj, Vectors: [][]float32{{1, 2, float32(math.NaN())}}}, "NaN"},
		{"NegativeTTL", saver.PutOp{Namespace: ns, Key: "k", Value: obj, TTL: -time.Second}, "ttl"},
		{"DeleteWithVectors", saver.PutOp{Namespace: ns, Key: "k", Vectors: [][]float32{{1, 2, 3}}}, "delete"},
		{"QueryLength", &saver.SearchOp{Prefix: ns, Limit: 10, Query: []float32{1}}, "query has 1 dims"},
		{"PrefixLabel", &saver.SearchOp{Prefix: saver.Namespace{""}, Limit: 10}, "namespace_prefix[0]"},
		{"Limit", &saver.SearchOp{Prefix: ns, Limit: saver.MaxSearchLimit + 1}, "limit"},
		{"Offset", &saver.SearchOp{Prefix: ns, Limit: 1, Offset: -1}, "offset"},
		{"Filter", &saver.SearchOp{Prefix: ns, Limit: 1, Filter: []byte(`{"a":{"$gt":"x"}}`)}, "filter.a.$gt"},
		{"MatchType", saver.ListNamespacesOp{Limit: 1, Conditions: []saver.MatchCondition{{MatchType: "infix"}}}, "match_conditions[0].match_type"},
		{"MatchLabel", saver.ListNamespacesOp{Limit: 1, Conditions: []saver.MatchCondition{{MatchType: "prefix", Path: []string{"a.b"}}}}, "match_conditions[0].path[0]"},
		{"MaxDepth", saver.ListNamespacesOp{Limit: 1, MaxDepth: -1}, "max_depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := []saver.ItemOp{saver.GetOp{Namespace: ns, Key: "fine"}, tt.op}
			err := saver.ValidateItemOps(ops, saver.Index{Dims: 3})
			if got, want := saver.ErrorCode(err), saver.EINVALID; got != want {
				t.Fatalf("code = %q, want %q (%v)", got, want, err)
			}
			msg := saver.ErrorMessage(err)
			if !strings.HasPrefix(msg, "ops[1]: ") || !strings.Contains(msg, tt.inMessage) {
				t.Fatalf("message %q, want ops[1] and %q", msg, tt.inMessage)
			}
		})
	}
	t.Run("Valid", func(t *testing.T) {
		ops := []saver.ItemOp{
			saver.PutOp{Namespace: ns, Key: "", Value: obj, Vectors: [][]float32{{1, 2, 3}}, TTL: time.Minute},
			saver.PutOp{Namespace: ns, Key: "k"},
			&saver.SearchOp{Limit: 10, Query: []float32{0, 0, 1}, Filter: []byte(`{"a":{"$gte":1}}`)},
			saver.ListNamespacesOp{Limit: 10, MaxDepth: 2, Conditions: []saver.MatchCondition{{MatchType: "suffix", Path: []string{"*"}}}},
		}
		if err := saver.ValidateItemOps(ops, saver.Index{Dims: 3}); err != nil {
			t.Fatal(err)
		}
		if ops[2].(*saver.SearchOp).ItemFilter() == nil {
			t.Fatal("Validate left the filter unparsed")
		}
	})
	t.Run("NoDims", func(t *testing.T) {
		err := saver.ValidateItemOps([]saver.ItemOp{saver.PutOp{Namespace: ns, Key: "k", Value: obj, Vectors: [][]float32{{1}}}}, saver.Index{})
		if saver.ErrorCode(err) != saver.EINVALID {
			t.Fatalf("vectors without dims: %v", err)
		}
	})
}

func TestQueryScoreBytes(t *testing.T) {
	q := saver.NewQuery([]float32{1, 0})
	le := func(flat []float32) []byte {
		var b []byte
		for _, x := range flat {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	tests := []struct {
		name   string
		flat   []float32
		n      int
		want   float64
		wantOK bool
	}{
		{"Same", []float32{2, 0}, 1, 1, true},
		{"Orthogonal", []float32{0, 3}, 1, 0, true},
		{"Opposite", []float32{-1, 0}, 1, -1, true},
		{"MaxPooling", []float32{-1, 0, 1, 1}, 2, 1 / math.Sqrt2, true},
		{"Zero", []float32{0, 0}, 1, 0, true},
		{"None", nil, 0, 0, false},
		{"OtherDims", []float32{1, 0, 0}, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := q.ScoreBytes(le(tt.flat), tt.n)
			if ok != tt.wantOK || (ok && math.Abs(got-tt.want) > 1e-6) {
				t.Fatalf("ScoreBytes = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestTopK(t *testing.T) {
	now := time.Now()
	score := func(f float64) *float64 { return &f }
	var hits []saver.Hit
	for i := range 100 {
		hits = append(hits, saver.Hit{Namespace: saver.Namespace{"n"}, Key: string(rune('a' + i%26)), UpdatedAt: now.Add(time.Duration(i) * time.Second), Score: score(float64((i * 37) % 100))})
	}
	top := saver.NewTopK(5)
	for _, h := range hits {
		top.Offer(h)
	}
	got := top.Sorted()
	if len(got) != 5 {
		t.Fatalf("kept %d hits, want 5", len(got))
	}
	for i, want := range []float64{99, 98, 97, 96, 95} {
		if *got[i].Score != want {
			t.Fatalf("hit %d score %v, want %v", i, *got[i].Score, want)
		}
	}
	t.Run("Unscored", func(t *testing.T) {
		top := saver.NewTopK(3)
		for _, h := range hits {
			h.Score = nil
			top.Offer(h)
		}
		got := top.Sorted()
		for i, want := range []time.Duration{99, 98, 97} {
			if !got[i].UpdatedAt.Equal(now.Add(want * time.Second)) {
				t.Fatalf("hit %d updated %v, want newest first", i, got[i].UpdatedAt)
			}
		}
	})
	if saver.NewTopK(0).Would(hits[0]) {
		t.Fatal("a selection of 0 would keep a hit")
	}
}

func TestItemExpired(t *testing.T) {
	now := time.Now()
	if saver.ItemExpired(time.Time{}, now) {
		t.Error("no expiry expired")
	}
	if !saver.ItemExpired(now, now) {
		t.Error("an item expiring at now is live")
	}
	if saver.ItemExpired(saver.ItemExpiry(now, time.Minute), now.Add(59*time.Second)) {
		t.Error("expired before its TTL")
	}
	if !saver.ItemExpiry(now, 0).IsZero() {
		t.Error("no TTL gives an expiry")
	}
}
