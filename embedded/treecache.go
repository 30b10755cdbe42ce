package embedded

import (
	"container/list"
	"hash/maphash"
	"sync"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
)

// treeCache keeps the tree index of the threads read last, decoded: a tree
// query of a long thread (its children, leaves, abandoned branches, resume
// context) otherwise scans and decodes every node record of the thread
// each time, 7.5 ms of a query's 13 at 10,000 checkpoints.
//
// It never answers with a state older than the store's. Every write
// transaction that changes the nodes bucket updates or drops the threads
// it touched once it has committed or failed (nodeWatch), and bumps their
// generation; a scan's result is kept only if its thread's generation is
// the one it read before its snapshot, so a scan that raced a write is
// used once and not kept. Expiry is applied on every read, as the scan
// does, so an entry holds expired nodes and flags until a write drops it.
type treeCache struct {
	max  int // most nodes held, over all threads; 0 keeps none
	seed maphash.Seed

	mu      sync.Mutex
	held    int
	threads map[string]*list.Element // of *cachedThread, by thread key prefix
	lru     list.List                // front: the thread read last
	// gens are bumped for each write of a thread whose prefix hashes to
	// the slot: threads sharing one only cost each other a kept scan.
	gens [256]uint64
}

// DefaultTreeCacheNodes is how many nodes the tree cache holds by default,
// over all threads: ten threads of 10,000 checkpoints, about 18 MB, 42 MB
// with their trees built (checkpoint ids of 36 bytes, measured).
const DefaultTreeCacheNodes = 100_000

type cachedThread struct {
	prefix string
	// spaces holds the nodes by namespace, each in checkpoint id order, the
	// namespaces in key order: a scan's order. A checkpoint newer than the
	// others of its namespace is an append to its own, whatever comes after.
	spaces []spaceNodes
	n      int // nodes in all

	// built is the tree of the nodes live until builtUntil (a Unix time, 0
	// for never), when the first of them or of their flags expires.
	mu         sync.Mutex
	built      *tree.Tree
	builtUntil int64
}

// spaceNodes are the nodes of one namespace, never none.
type spaceNodes []cachedNode

// newCachedThread holds nodes in a scan's order. Each namespace's slice is
// capped at its end, so that an append to one never writes over the next.
func newCachedThread(prefix string, nodes []cachedNode) *cachedThread {
	t := &cachedThread{prefix: prefix, n: len(nodes)}
	for i := 0; i < len(nodes); {
		j := i + 1
		for j < len(nodes) && nodes[j].node.NS == nodes[i].node.NS {
			j++
		}
		t.spaces = append(t.spaces, spaceNodes(nodes[i:j:j]))
		i = j
	}
	return t
}

// cachedNode is a node as its records say, before expiry: its own expiry
// and the latest of its error and interrupt flags' (Later: 0 is never).
type cachedNode struct {
	node           saver.Node
	exp            int64
	hasErr, hasInt bool
	errExp, intExp int64
}

func newTreeCache(maxNodes int) *treeCache {
	return &treeCache{max: maxNodes, seed: maphash.MakeSeed(), threads: map[string]*list.Element{}}
}

func (c *treeCache) slot(prefix []byte) int {
	return int(maphash.Bytes(c.seed, prefix) % uint64(len(c.gens)))
}

// get returns the thread's cached nodes, most recently used first.
func (c *treeCache) get(prefix []byte) (*cachedThread, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.threads[string(prefix)]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cachedThread), true
}

// gen returns the thread's generation, to pass to keep after the scan.
func (c *treeCache) gen(prefix []byte) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens[c.slot(prefix)]
}

// keep holds a scanned thread unless a write of it committed since gen
// was read, evicting the threads read longest ago to make room.
func (c *treeCache) keep(t *cachedThread, gen uint64) {
	if t.n == 0 || t.n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens[c.slot([]byte(t.prefix))] != gen {
		return
	}
	c.removeLocked(t.prefix)
	for c.held+t.n > c.max {
		c.removeLocked(c.lru.Back().Value.(*cachedThread).prefix)
	}
	c.threads[t.prefix] = c.lru.PushFront(t)
	c.held += t.n
}

// peek returns the thread's cached nodes, nil if it has none, without
// counting a read.
func (c *treeCache) peek(prefix []byte) *cachedThread {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.threads[string(prefix)]; ok {
		return e.Value.(*cachedThread)
	}
	return nil
}

// apply brings the threads a write transaction touched up to date once it
// ended: a thread whose change applies (nodeWatch) and that is still the
// one the change was read against is replaced by its updated copy, and
// every other is dropped; all are dropped when the transaction failed.
// Their generations move either way, so that no scan that raced the write
// is kept.
func (c *treeCache) apply(touched map[string]*threadChange, committed bool) {
	if len(touched) == 0 {
		return
	}
	updated := make(map[string]*cachedThread, len(touched))
	for p, ch := range touched {
		if !committed || ch.base == nil {
			continue
		}
		// Built outside the lock: at 10,000 nodes a copy takes a tenth of
		// a millisecond that other threads' readers need not wait. Built
		// before base is checked to be still cached, too: with appends into
		// base's arrays past what base's readers see, and that is safe
		// because every write transaction runs on the group commit's one
		// committer (nodeWatch is its engine), so no two changes extend
		// the same base; a base replaced meanwhile by a reader's scan has
		// no other successor.
		if t, ok := ch.base.with(ch.puts); ok && t.n <= c.max {
			updated[p] = t
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, ch := range touched {
		c.gens[c.slot([]byte(p))]++
		e, ok := c.threads[p]
		t := updated[p]
		if !ok || t == nil || e.Value != ch.base {
			c.removeLocked(p)
			continue
		}
		c.held += t.n - ch.base.n
		e.Value = t
	}
	for c.held > c.max {
		c.removeLocked(c.lru.Back().Value.(*cachedThread).prefix)
	}
}

// dropAll forgets every thread and bumps every generation: a write
// transaction wrote a key that did not parse, of a thread unknown.
func (c *treeCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.gens {
		c.gens[i]++
	}
	clear(c.threads)
	c.lru.Init()
	c.held = 0
}

func (c *treeCache) removeLocked(prefix string) {
	if e, ok := c.threads[prefix]; ok {
		c.held -= e.Value.(*cachedThread).n
		c.lru.Remove(e)
		delete(c.threads, prefix)
	}
}

// live returns the nodes of the thread that have not expired at now, with
// the flags that have not. The nodes share their Parents maps with the
// cache: callers only read them.
func (t *cachedThread) live(now time.Time) []saver.Node {
	out := make([]saver.Node, 0, t.n)
	for _, space := range t.spaces {
		for i := range space {
			c := &space[i]
			if saver.Expired(c.exp, now) {
				continue
			}
			n := c.node
			n.HasError = c.hasErr && !saver.Expired(c.errExp, now)
			n.HasInterrupt = c.hasInt && !saver.Expired(c.intExp, now)
			out = append(out, n)
		}
	}
	return out
}

// tree returns the thread's tree at now: the one built before while no
// node or flag has expired since, or a new one. Trees are read-only once
// built, so concurrent requests share one.
func (t *cachedThread) tree(now time.Time) *tree.Tree {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.built == nil || (t.builtUntil != 0 && now.Unix() >= t.builtUntil) {
		t.built, t.builtUntil = tree.Build(t.live(now)), t.nextExpiry(now)
	}
	return t.built
}

// nextExpiry is the first expiry after now among the nodes and their
// flags, 0 if none is to come.
func (t *cachedThread) nextExpiry(now time.Time) int64 {
	var next int64
	soonest := func(exp int64) {
		if exp != 0 && !saver.Expired(exp, now) && (next == 0 || exp < next) {
			next = exp
		}
	}
	for _, space := range t.spaces {
		for i := range space {
			c := &space[i]
			soonest(c.exp)
			if c.hasErr {
				soonest(c.errExp)
			}
			if c.hasInt {
				soonest(c.intExp)
			}
		}
	}
	return next
}
