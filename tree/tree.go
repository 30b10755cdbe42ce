// Package tree builds a thread's checkpoint tree from its nodes and answers
// the questions asked of it: paths, children, leaves, abandoned branches and
// failed attempts, in compact forms for the API and in text for prompts.
//
// A tree is built from keys and metadata only (saver.Node), never payloads,
// and is read-only once built. Input comes from client-given ids, so Build
// never drops a node, never panics and never loops: a node whose parent is
// missing, or whose parent link closes a cycle, becomes a root flagged Orphan.
// Nothing recurses, so a 10,000-deep chain is as safe as a short one.
package tree

import (
	"cmp"
	"slices"
	"strings"

	"github.com/saver-dev/saver"
)

// Tree is the checkpoint tree of one thread, across all its namespaces.
type Tree struct {
	nodes []Node // every node once; pointers into it are stable
	byKey map[key]int
	roots []*Node
	head  *Node
}

// key names a node: checkpoint ids are only unique within a namespace.
type key struct{ ns, id string }

// Build returns the tree of nodes, given in any order. A node whose
// (namespace, id) was already seen is ignored: the first copy wins.
//
// A node's parent is ParentID in its own namespace. The first checkpoint of a
// subgraph (ParentID "" in a namespace other than "") hangs under the
// parent-graph checkpoint that ran it, Parents[parentNS(NS)]. A root of the
// root namespace is a plain root; any other node whose parent cannot be
// found, or whose parent link would close a cycle, is a root flagged Orphan.
func Build(nodes []saver.Node) *Tree {
	t := &Tree{
		nodes: make([]Node, 0, len(nodes)),
		byKey: make(map[key]int, len(nodes)),
	}
	for _, n := range nodes {
		k := key{n.NS, n.ID}
		if _, dup := t.byKey[k]; dup {
			continue
		}
		t.byKey[k] = len(t.nodes)
		t.nodes = append(t.nodes, Node{Node: n})
	}

	// Parents are indices while cycles are found, so that the search needs
	// no per-node state on the exported type; -1 is "no parent".
	parent := make([]int, len(t.nodes))
	for i := range t.nodes {
		n := &t.nodes[i]
		parent[i] = -1
		k, ok := parentKey(&n.Node)
		if !ok {
			continue
		}
		if p, found := t.byKey[k]; found && k.id != "" {
			parent[i] = p
		} else {
			n.Orphan = true
		}
	}
	t.cutCycles(parent)

	// All children lists share one backing array: one allocation instead of
	// one per parent, which is most of Build's cost on a long chain.
	counts := make([]int, len(t.nodes))
	for _, p := range parent {
		if p >= 0 {
			counts[p]++
		}
	}
	all, off := make([]*Node, len(t.nodes)), 0
	for i, c := range counts {
		if c > 0 {
			t.nodes[i].Children = all[off : off : off+c]
			off += c
		}
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		if parent[i] < 0 {
			t.roots = append(t.roots, n)
			continue
		}
		n.Parent = &t.nodes[parent[i]]
		n.Parent.Children = append(n.Parent.Children, n)
	}
	for i := range t.nodes {
		if c := t.nodes[i].Children; len(c) > 1 {
			slices.SortFunc(c, byID)
		}
	}
	slices.SortFunc(t.roots, byNS)

	// The head is what LangGraph loads as "latest": the largest id of the
	// root namespace. Ids are uuid6, so string order is creation order.
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.NS == "" && (t.head == nil || n.ID > t.head.ID) {
			t.head = n
		}
	}
	for n := t.head; n != nil; n = n.Parent {
		n.Live = true
	}
	return t
}

// parentKey returns the key of n's parent, and false if n is a root of the
// root namespace. The key's id is "" when a subgraph root does not name the
// checkpoint that ran it.
func parentKey(n *saver.Node) (key, bool) {
	if n.ParentID != "" {
		return key{n.NS, n.ParentID}, true
	}
	if n.NS == "" {
		return key{}, false
	}
	ns := parentNS(n.NS)
	return key{ns, n.Parents[ns]}, true
}

// parentNS returns the namespace of the graph that ran the subgraph in ns:
// "a:1|b:2" -> "a:1", "a:1" -> "". A second call of a subgraph within one
// task gets a numeric segment ("a:1|b:2|1"); it names a call, not a graph,
// so it is dropped first, as LangGraph's recast_checkpoint_ns does.
func parentNS(ns string) string {
	for {
		i := strings.LastIndexByte(ns, '|')
		if i < 0 {
			return ""
		}
		if !isDigits(ns[i+1:]) {
			return ns[:i]
		}
		ns = ns[:i]
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cutCycles breaks every cycle of parent links by making one node of the
// cycle an orphan root: the one with the smallest id, since with
// time-ordered ids it is the node whose link points forward in time and
// so the bad link. Each node is walked once: O(n).
func (t *Tree) cutCycles(parent []int) {
	const (
		unseen = iota
		walking
		done
	)
	state := make([]uint8, len(parent))
	var walk []int
	for i := range parent {
		walk = walk[:0]
		j := i
		for j >= 0 && state[j] == unseen {
			state[j] = walking
			walk = append(walk, j)
			j = parent[j]
		}
		if j >= 0 && state[j] == walking {
			// j is on this walk, so walk[from:] is a cycle.
			from := slices.Index(walk, j)
			cut := walk[from]
			for _, c := range walk[from+1:] {
				if byNS(&t.nodes[c], &t.nodes[cut]) < 0 {
					cut = c
				}
			}
			parent[cut] = -1
			t.nodes[cut].Orphan = true
		}
		for _, w := range walk {
			state[w] = done
		}
	}
}

// byID orders children: by id, which is creation order, then namespace.
func byID(a, b *Node) int {
	return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.NS, b.NS))
}

// byNS orders roots and listings: the root namespace first, so a thread
// reads from its start, then by id.
func byNS(a, b *Node) int {
	return cmp.Or(cmp.Compare(a.NS, b.NS), cmp.Compare(a.ID, b.ID))
}

// Len returns the number of nodes in the tree.
func (t *Tree) Len() int { return len(t.nodes) }

// Get returns checkpoint id of namespace ns, or nil if the tree does not hold
// it. Ids are only unique within a namespace, so both are needed.
func (t *Tree) Get(ns, id string) *Node {
	i, ok := t.byKey[key{ns, id}]
	if !ok {
		return nil
	}
	return &t.nodes[i]
}

// Roots returns the roots of the tree, the root namespace first, then by id:
// the thread's first checkpoint, then orphans.
func (t *Tree) Roots() []*Node { return slices.Clone(t.roots) }

// Head returns the latest checkpoint of the root namespace, the one LangGraph
// resumes from, or nil if the tree has no node in the root namespace.
func (t *Tree) Head() *Node { return t.head }

// LivePath returns the path from the root to the head, or nil without a head.
func (t *Tree) LivePath() []*Node {
	if t.head == nil {
		return nil
	}
	return t.head.Path()
}

// Leaves returns the branch heads of every namespace, ordered by namespace
// then id. A leaf is a node with no child in its own namespace: a subgraph
// run under a checkpoint does not continue that checkpoint's graph, so a
// parent-graph checkpoint whose only children are subgraph roots is a leaf.
func (t *Tree) Leaves() []*Node {
	return t.filter(func(n *Node) bool { return n.next() == nil })
}

// Failures returns every node holding an error write, ordered by namespace
// then id: each is a failed attempt at the step after it. Its Status says
// whether that step was later run again from it (StatusRetried) or not
// (StatusError); Live says whether it is on the live path.
func (t *Tree) Failures() []*Node {
	return t.filter(func(n *Node) bool { return n.HasError })
}

func (t *Tree) filter(keep func(*Node) bool) []*Node {
	var out []*Node
	for i := range t.nodes {
		if n := &t.nodes[i]; keep(n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, byNS)
	return out
}

// Compact returns every node as an Entry, parents before children: roots in
// Roots order, each followed depth-first by its subtree, children by id.
func (t *Tree) Compact() []Entry {
	out := make([]Entry, 0, len(t.nodes))
	// An explicit stack, not recursion: chains can be 10,000 deep.
	stack := slices.Clone(t.roots)
	slices.Reverse(stack)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, n.Entry())
		for i := len(n.Children) - 1; i >= 0; i-- {
			stack = append(stack, n.Children[i])
		}
	}
	return out
}
