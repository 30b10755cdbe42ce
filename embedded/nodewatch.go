package embedded

import (
	"bytes"
	"cmp"
	"slices"
)

// nodeWatch is the engine under the group commit: it keeps the tree cache
// true to what each write transaction did to the nodes bucket, once the
// transaction ends. A cached thread that a committed transaction only put
// nodes and new flags to is updated in place of the scan its next query
// would pay (13 ms at 10,000 checkpoints, for a thread written between
// every query); a thread a transaction deleted from, gave a flag it had
// already, or whose transaction failed is dropped, to be scanned again.
type nodeWatch struct {
	engine
	cache *treeCache
}

func (w nodeWatch) Update(fn func(kvTx) error) error {
	t := &watchTx{cache: w.cache}
	err := w.engine.Update(func(tx kvTx) error {
		t.kvTx = tx
		return fn(t)
	})
	switch {
	case t.all:
		w.cache.dropAll()
	case err != nil:
		w.cache.apply(t.touched, false)
	default:
		w.cache.apply(t.touched, true)
	}
	return err
}

type watchTx struct {
	kvTx
	cache   *treeCache
	touched map[string]*threadChange // by thread key prefix
	all     bool
}

// threadChange is what one transaction wrote to a thread's tree index, in
// order, to apply to base, the cached thread it found; base is nil when
// the thread was not cached or the change is not one to apply (a delete,
// a record that did not decode), and the thread is then dropped.
type threadChange struct {
	base *cachedThread
	puts []nodePut
}

// nodePut is a record put in the nodes bucket: a node's own (flag 0) or a
// flag of one.
type nodePut struct {
	ns, id string
	flag   nodeFlag
	node   cachedNode // a node's record
	exp    int64      // a flag's expiry
}

type nodeFlag uint8

const (
	flagNone nodeFlag = iota
	flagError
	flagInterrupt
)

func (t *watchTx) Bucket(name []byte) kvBucket {
	b := t.kvTx.Bucket(name)
	if b == nil || string(name) != string(bucketNodes) {
		return b
	}
	return watchBucket{kvBucket: b, tx: t}
}

// change returns the change of the thread of k, a key of the nodes bucket
// (its first two components are the tenant and the thread id), with the
// thread id and the rest of the key; nil when k does not parse, and every
// thread is then dropped.
func (t *watchTx) change(k []byte) (ch *threadChange, threadID string, rest []byte) {
	_, rest, err := nextComponent(k)
	if err == nil {
		threadID, rest, err = nextComponent(rest)
	}
	if err != nil {
		t.all = true
		return nil, "", nil
	}
	prefix := k[:len(k)-len(rest)]
	if ch = t.touched[string(prefix)]; ch == nil {
		if t.touched == nil {
			t.touched = map[string]*threadChange{}
		}
		ch = &threadChange{base: t.cache.peek(prefix)}
		t.touched[string(prefix)] = ch
	}
	return ch, threadID, rest
}

// put records a record put, read as the scan (Store.thread) reads it.
func (t *watchTx) put(k, v []byte) {
	ch, threadID, rest := t.change(k)
	if ch == nil || ch.base == nil {
		return
	}
	ns, tail, err := nextComponent(rest)
	if err != nil {
		ch.base = nil
		return
	}
	id, tail, err := nextComponent(tail)
	if err != nil {
		ch.base = nil
		return
	}
	p := nodePut{ns: ns, id: id}
	if len(tail) == 0 {
		p.node.node.ThreadID, p.node.node.NS, p.node.node.ID = threadID, ns, id
		if p.node.exp, err = decodeNode(&p.node.node, v); err != nil {
			ch.base = nil
			return
		}
		ch.puts = append(ch.puts, p)
		return
	}
	task := bytes.IndexByte(tail, sep)
	if task < 0 {
		ch.base = nil
		return
	}
	switch idx := tail[task+1:]; {
	case bytes.Equal(idx, errorIdx):
		p.flag = flagError
	case bytes.Equal(idx, interruptIdx):
		p.flag = flagInterrupt
	default:
		return // the scan reads no other flag
	}
	if p.exp, err = recordExpiry(v); err != nil {
		ch.base = nil
		return
	}
	ch.puts = append(ch.puts, p)
}

func (t *watchTx) delete(k []byte) {
	if ch, _, _ := t.change(k); ch != nil {
		ch.base = nil
	}
}

type watchBucket struct {
	kvBucket
	tx *watchTx
}

func (b watchBucket) Put(k, v []byte) error {
	b.tx.put(k, v)
	return b.kvBucket.Put(k, v)
}

func (b watchBucket) Delete(k []byte) error {
	b.tx.delete(k)
	return b.kvBucket.Delete(k)
}

// maxNodeCopy is the most nodes with copies a change is applied: past it
// the thread is dropped instead. The copy is made on the commit
// goroutine, which every writer waits on, and a node holds pointers: at
// 10,000 a copy took milliseconds with the garbage collector's share. It
// is a copy of one namespace's nodes; appends, the usual change (a
// checkpoint newer than the others of its namespace), copy nothing but
// when the slice grows.
const maxNodeCopy = 2048

// with returns the thread with the puts applied, as a scan after them
// would read it; false when one is not a change it applies without a scan
// (a flag of a node not listed, or of a kind the node has already: the
// scan keeps the later expiry of the two records, which may be the one
// replaced), or only with a copy of more than maxNodeCopy nodes. t is left
// as it was: readers share it.
func (t *cachedThread) with(puts []nodePut) (*cachedThread, bool) {
	spaces := slices.Clone(t.spaces) // the namespaces' headers only
	// shared[s] is how many of spaces[s]'s first nodes readers of t may be
	// reading: a node past them (appended here) is written in place.
	shared := make([]int, len(spaces))
	for s := range spaces {
		shared[s] = len(spaces[s])
	}
	n := t.n
	for _, p := range puts {
		s, found := slices.BinarySearchFunc(spaces, p.ns, func(sp spaceNodes, ns string) int {
			return cmp.Compare(sp[0].node.NS, ns)
		})
		if !found {
			if p.flag != flagNone {
				return nil, false // a flag of no node
			}
			spaces = slices.Insert(spaces, s, spaceNodes{p.node})
			shared = slices.Insert(shared, s, 0)
			n++
			continue
		}
		nodes, left, ok := spaces[s].with(p, shared[s], len(puts))
		if !ok {
			return nil, false
		}
		n += len(nodes) - len(spaces[s])
		spaces[s], shared[s] = nodes, left
	}
	return &cachedThread{prefix: t.prefix, spaces: spaces, n: n}, true
}

// with returns the namespace's nodes with p applied, of which readers see
// the first shared: those are copied before one is written, with room for
// grow more. It returns how many of the nodes readers still share: none
// once they are a copy.
func (nodes spaceNodes) with(p nodePut, shared, grow int) (spaceNodes, int, bool) {
	own := func() bool {
		if shared == 0 {
			return true
		}
		if shared > maxNodeCopy {
			return false
		}
		nodes, shared = append(make(spaceNodes, 0, len(nodes)+grow), nodes...), 0
		return true
	}
	i, found := slices.BinarySearchFunc(nodes, p.id, func(c cachedNode, id string) int {
		return cmp.Compare(c.node.ID, id)
	})
	switch {
	case p.flag == flagNone && !found:
		if i < shared && !own() {
			return nil, 0, false
		}
		return slices.Insert(nodes, i, p.node), shared, true
	case p.flag == flagNone:
		if i < shared && !own() {
			return nil, 0, false
		}
		c := &nodes[i]
		c.node, c.exp = p.node.node, p.node.exp
		return nodes, shared, true
	case !found:
		return nil, 0, false
	}
	c := nodes[i]
	switch {
	case p.flag == flagError && !c.hasErr:
		c.hasErr, c.errExp = true, p.exp
	case p.flag == flagInterrupt && !c.hasInt:
		c.hasInt, c.intExp = true, p.exp
	default:
		return nil, 0, false
	}
	if i < shared && !own() {
		return nil, 0, false
	}
	nodes[i] = c
	return nodes, shared, true
}
