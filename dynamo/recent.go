package dynamo

import (
	"container/list"
	"sync"
)

// recent remembers, per channel of a namespace, the value of the version a
// put last wrote or a latest read last returned, so that the next put of
// the channel can store a patch against it (see delta.go) without reading
// it back. It holds at most max bytes of values, dropping the least
// recently used. A stale entry costs no correctness: a patch is written on
// the condition that the namespace's lifetimes item still names its base
// as the channel's version, and the put falls back to the whole value when
// it does not.
type recent struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *recentValue, most recent first
	byKey map[recentKey]*list.Element
}

type recentKey struct{ pk, ns, channel string }

type recentValue struct {
	key     recentKey
	version string
	typ     string
	data    []byte
	// chain is the versions this one is a patch on, the whole value first
	// and its base last; nil for a whole value. patched is the bytes of
	// the patches along it, this one's included.
	chain   []string
	patched int
	exp     int64  // the blob's expiry (0: never)
	hash    string // contentHash(data)
}

func newRecent(max int) *recent {
	return &recent{max: max, order: list.New(), byKey: map[recentKey]*list.Element{}}
}

func (r *recent) get(k recentKey) (*recentValue, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byKey[k]
	if !ok {
		return nil, false
	}
	r.order.MoveToFront(e)
	return e.Value.(*recentValue), true
}

// put records v, replacing the channel's entry. A value over the whole
// budget is not kept.
func (r *recent) put(v *recentValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remove(v.key)
	if len(v.data) > r.max {
		return
	}
	r.byKey[v.key] = r.order.PushFront(v)
	r.size += len(v.data)
	for r.size > r.max {
		r.remove(r.order.Back().Value.(*recentValue).key)
	}
}

func (r *recent) drop(k recentKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remove(k)
}

func (r *recent) remove(k recentKey) {
	if e, ok := r.byKey[k]; ok {
		r.size -= len(e.Value.(*recentValue).data)
		r.order.Remove(e)
		delete(r.byKey, k)
	}
}
