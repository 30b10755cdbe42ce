package dynamo

import (
	"container/list"
	"sync"
)

// recent is the cache of the patch cache value (patched.go): per channel of
// a namespace, the value of the version a put last wrote or a latest read
// last returned, so that the next put of the channel can store a patch
// against it without reading it back, and the next read can take it from
// here (known.go). It holds at most max bytes of values, dropping the least
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
	// vouched: a put of this store brought the value, so the namespace's
	// lifetimes entry holds its hash, which a put that references it can
	// check (known.go). A value remembered from a read is not vouched.
	vouched bool
}

// entryOverhead approximates the memory an entry takes beside its value and
// strings, so that many small values stay within the budget too.
const entryOverhead = 160

func (v *recentValue) cost() int {
	return len(v.data) + len(v.key.pk) + len(v.key.ns) + len(v.key.channel) + len(v.version) + len(v.hash) + entryOverhead
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

// getAll returns the entries of keys that it holds, with one lock.
func (r *recent) getAll(keys []recentKey) map[recentKey]*recentValue {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[recentKey]*recentValue, len(keys))
	for _, k := range keys {
		if e, ok := r.byKey[k]; ok {
			r.order.MoveToFront(e)
			out[k] = e.Value.(*recentValue)
		}
	}
	return out
}

// put records v, replacing the channel's entry. A value over the whole
// budget is not kept.
func (r *recent) put(v *recentValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remove(v.key)
	if v.cost() > r.max {
		return
	}
	r.byKey[v.key] = r.order.PushFront(v)
	r.size += v.cost()
	for r.size > r.max {
		r.remove(r.order.Back().Value.(*recentValue).key)
	}
}

func (r *recent) drop(k recentKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remove(k)
}

// dropVersion drops the channel's entry if it is of version.
func (r *recent) dropVersion(k recentKey, version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.byKey[k]; ok && e.Value.(*recentValue).version == version {
		r.remove(k)
	}
}

func (r *recent) remove(k recentKey) {
	if e, ok := r.byKey[k]; ok {
		r.size -= e.Value.(*recentValue).cost()
		r.order.Remove(e)
		delete(r.byKey, k)
	}
}
