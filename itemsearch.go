package saver

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"time"
)

// Query is a search's embedding, with its norm computed once.
type Query struct {
	vec  []float32
	norm float64
}

// NewQuery prepares v for scoring.
func NewQuery(v []float32) Query { return Query{vec: v, norm: norm(v)} }

// ScoreBytes is the cosine similarity of the query with the best of an
// item's n vectors, kept as both stores keep them: little-endian float32s
// laid end to end, read in place (max pooling, as InMemoryStore ranks an
// item by its best field). A zero vector scores 0, as in InMemoryStore.
// Vectors of another length than the query's cannot be compared: ok is
// false for an item without vectors of its length, which is then no result
// of the search (PostgresStore returns only items with vectors to a search
// with a query).
func (q Query) ScoreBytes(b []byte, n int) (score float64, ok bool) {
	d := len(q.vec)
	if n == 0 || len(b) != 4*n*d {
		return 0, false
	}
	score = math.Inf(-1)
	for i := 0; i < n; i++ {
		if s := cosine(q, b[4*i*d:4*(i+1)*d]); s > score {
			score = s
		}
	}
	return score, true
}

// cosine is the cosine similarity of q with the vector of len(q.vec)
// float32s in b, summed in float64 four lanes at a time (a search scores
// every item under its prefix: the lanes keep the CPU's adders busy).
func cosine(q Query, b []byte) float64 {
	var d0, d1, d2, d3, v0, v1, v2, v3 float64
	x := q.vec
	b = b[:4*len(x)]
	le := binary.LittleEndian
	i := 0
	for ; i+4 <= len(x); i += 4 {
		c := b[4*i : 4*i+16]
		y0 := float64(math.Float32frombits(le.Uint32(c[0:])))
		y1 := float64(math.Float32frombits(le.Uint32(c[4:])))
		y2 := float64(math.Float32frombits(le.Uint32(c[8:])))
		y3 := float64(math.Float32frombits(le.Uint32(c[12:])))
		d0 += float64(x[i]) * y0
		d1 += float64(x[i+1]) * y1
		d2 += float64(x[i+2]) * y2
		d3 += float64(x[i+3]) * y3
		v0 += y0 * y0
		v1 += y1 * y1
		v2 += y2 * y2
		v3 += y3 * y3
	}
	for ; i < len(x); i++ {
		y := float64(math.Float32frombits(le.Uint32(b[4*i:])))
		d0 += float64(x[i]) * y
		v0 += y * y
	}
	dot, vv := (d0+d1)+(d2+d3), (v0+v1)+(v2+v3)
	if q.norm == 0 || vv == 0 {
		return 0
	}
	return dot / (q.norm * math.Sqrt(vv))
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// Hit is a search candidate: where the item is, when it was last updated,
// its score when the search has a query, and whatever the store needs to
// read it again (Ref).
type Hit struct {
	Namespace Namespace
	Key       string
	UpdatedAt time.Time
	Score     *float64
	Ref       []byte
}

// CompareHits orders search results: by score, highest first, when they
// have one; then by last update, newest first (PostgresStore's order for a
// search without a query); then by namespace and key, so that the order is
// total and every page of a search is the same whatever the store.
func CompareHits(a, b Hit) int {
	if a.Score != nil && b.Score != nil {
		if c := cmp.Compare(*b.Score, *a.Score); c != 0 {
			return c
		}
	}
	return cmp.Or(
		b.UpdatedAt.Compare(a.UpdatedAt),
		a.Namespace.Compare(b.Namespace),
		strings.Compare(a.Key, b.Key))
}

// TopK keeps the k first hits in CompareHits order among those offered:
// memory for k hits whatever the number offered, as a search offers every
// item under its prefix.
type TopK struct {
	k int
	h hitHeap // the worst kept hit on top
}

// NewTopK returns a selection of the k first hits.
func NewTopK(k int) *TopK { return &TopK{k: k} }

// Would reports whether a hit would be kept, so that a store can skip
// reading what would not be. A hit without its namespace and key yet is
// judged on its score and update time alone: when those tie with the last
// hit kept, it would be kept (an empty namespace comes first), so a store
// may ask before parsing an item's key and ask again after.
func (t *TopK) Would(h Hit) bool {
	return t.k > 0 && (len(t.h) < t.k || CompareHits(h, t.h[0]) < 0)
}

// Offer keeps h if it is among the k first so far.
func (t *TopK) Offer(h Hit) {
	switch {
	case t.k <= 0:
	case len(t.h) < t.k:
		heap.Push(&t.h, h)
	case CompareHits(h, t.h[0]) < 0:
		t.h[0] = h
		heap.Fix(&t.h, 0)
	}
}

// Sorted returns the hits kept, first first.
func (t *TopK) Sorted() []Hit {
	out := slices.Clone(t.h)
	slices.SortFunc(out, CompareHits)
	return out
}

// hitHeap is a max-heap in CompareHits order: the last hit on top.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return CompareHits(h[i], h[j]) > 0 }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
