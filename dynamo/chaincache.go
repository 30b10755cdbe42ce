package dynamo

import (
	"container/list"
	"sync"

	"github.com/saver-dev/saver"
)

// chainCache keeps, per replica, what delta histories read of a delta
// chain: per checkpoint, its parent link, channel versions, the attrBrought
// hints and its writes, decoded. A DeltaChannel turn asks for the history
// at the newest checkpoint, whose chain is the previous turn's plus a few
// checkpoints; with the older part here, the history reads from the table
// only the checkpoints newer than the part it holds (historyScan).
//
// Only ancestors of a history's target are kept: checkpoints that have a
// child. LangGraph makes a checkpoint's DeltaChannel writes durable before
// it puts any child of it (its loop waits for them; update_state forks a
// checkpoint that has one rather than write on it), so the writes of a
// checkpoint with a child do not change. The store does not enforce that
// (writes may come for any checkpoint at any time), so a put_writes this
// replica takes drops the checkpoint's entry, and deleting, pruning or
// copying over a thread drops the thread's; another replica's write to a
// checkpoint that already had a child, which LangGraph never makes, is not
// seen here until the entry is dropped. The target itself is always read,
// so a checkpoint's late writes are seen as long as it has no child.
//
// Entries hold an expiry, the earliest of their items'; an entry past it
// is not used. The cache holds at most max bytes, dropping the least
// recently used entries.
type chainCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *chainEntry, most recent first
	byKey map[chainKey]*list.Element
	// byNS indexes the entries of each namespace of a thread, to find the
	// newest cached checkpoint below a target and to drop a thread.
	byNS map[nsKey]map[string]*list.Element
	// epochs count the drops of the threads whose partition keys hash to
	// each stripe: a history that read the table before a drop must not
	// keep what it read after it (put checks the epoch it started at).
	epochs [1024]uint64
}

type nsKey struct{ pk, ns string }

type chainKey struct {
	nsKey
	id string
}

// chainEntry is a checkpoint as a delta history reads it.
type chainEntry struct {
	key      chainKey
	parent   string
	versions map[string]string
	brought  map[string]bool // nil: the item predates attrBrought
	// writes are the checkpoint's live writes, all channels, in
	// Tuple.Writes order.
	writes []saver.Write
	// seeds are the values of channels the checkpoint was found to hold.
	seeds map[string]*saver.Typed
	exp   int64 // the earliest expiry of the items read (0: never)
	cost  int
}

// chainEntryOverhead approximates an entry's memory beside its strings and
// values.
const chainEntryOverhead = 200

// DefaultChainCacheBytes is the default budget of the delta chain cache.
const DefaultChainCacheBytes = 64 << 20

func newChainCache(max int) *chainCache {
	return &chainCache{max: max, order: list.New(), byKey: map[chainKey]*list.Element{}, byNS: map[nsKey]map[string]*list.Element{}}
}

func (e *chainEntry) measure() {
	n := chainEntryOverhead + len(e.key.pk) + len(e.key.ns) + 2*len(e.key.id) + len(e.parent)
	for ch, v := range e.versions {
		n += len(ch) + len(v) + 32
	}
	n += 24 * len(e.brought)
	for i := range e.writes {
		w := &e.writes[i]
		n += len(w.TaskID) + len(w.TaskPath) + len(w.Channel) + len(w.Value.Type) + len(w.Value.Data) + 80
	}
	for ch, v := range e.seeds {
		n += len(ch) + len(v.Type) + len(v.Data) + 48
	}
	e.cost = n
}

// get returns the live entry of key, nil if there is none.
func (c *chainCache) get(k chainKey, now int64) *chainEntry {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil
	}
	e := el.Value.(*chainEntry)
	if e.exp != 0 && e.exp <= now {
		c.remove(el)
		return nil
	}
	c.order.MoveToFront(el)
	return e
}

// below returns the largest checkpoint id of the namespace the cache holds
// that sorts below id ("": any), and "" when it holds none.
func (c *chainCache) below(ns nsKey, id string) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	best := ""
	for cid := range c.byNS[ns] {
		if (id == "" || cid < id) && cid > best {
			best = cid
		}
	}
	return best
}

// stripe returns the index of pk's epoch.
func stripe(pk string) int {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(pk); i++ {
		h = (h ^ uint32(pk[i])) * 16777619
	}
	return int(h % 1024)
}

// epoch returns the drop count of pk's stripe, for put.
func (c *chainCache) epoch(pk string) uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[stripe(pk)]
}

// put records entries read since epoch, replacing theirs, unless a drop of
// their thread came since. An entry over the whole budget is not kept.
func (c *chainCache) put(epoch uint64, entries ...*chainEntry) {
	if c == nil || len(entries) == 0 {
		return
	}
	for _, e := range entries {
		e.measure()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epochs[stripe(entries[0].key.pk)] != epoch {
		return
	}
	for _, e := range entries {
		c.add(e)
	}
}

func (c *chainCache) add(e *chainEntry) {
	if el, ok := c.byKey[e.key]; ok {
		c.remove(el)
	}
	if e.cost > c.max {
		return
	}
	el := c.order.PushFront(e)
	c.byKey[e.key] = el
	ids := c.byNS[e.key.nsKey]
	if ids == nil {
		ids = map[string]*list.Element{}
		c.byNS[e.key.nsKey] = ids
	}
	ids[e.key.id] = el
	c.size += e.cost
	for c.size > c.max {
		c.remove(c.order.Back())
	}
}

// drop forgets a checkpoint: writes came for it.
func (c *chainCache) drop(k chainKey) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[stripe(k.pk)]++
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
}

// dropThread forgets every checkpoint of the thread of partition key pk.
func (c *chainCache) dropThread(pk string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[stripe(pk)]++
	for ns, ids := range c.byNS {
		if ns.pk != pk {
			continue
		}
		for _, el := range ids {
			c.remove(el)
		}
	}
}

func (c *chainCache) remove(el *list.Element) {
	e := el.Value.(*chainEntry)
	c.order.Remove(el)
	delete(c.byKey, e.key)
	if ids := c.byNS[e.key.nsKey]; ids != nil {
		delete(ids, e.key.id)
		if len(ids) == 0 {
			delete(c.byNS, e.key.nsKey)
		}
	}
	c.size -= e.cost
}

// RememberChains sets the budget of the delta chain cache: the bytes of
// ancestors' writes the store keeps so that a delta history reads only the
// part of its chain newer than what it holds; 0 turns it off.
func (s *Store) RememberChains(bytes int) {
	if bytes <= 0 {
		s.chains = nil
		return
	}
	s.chains = newChainCache(bytes)
}
