package tree

import (
	"slices"

	"github.com/saver-dev/saver"
)

// Node is one checkpoint in a built tree. Its fields are set by Build and
// must not be changed.
type Node struct {
	saver.Node

	// Parent is the resolved parent: the ParentID checkpoint of the same
	// namespace, or, for the first checkpoint of a subgraph, the
	// parent-graph checkpoint that ran it. Nil for a root.
	Parent *Node
	// Children holds the same-namespace children (forks are siblings) and
	// the roots of subgraphs run under this checkpoint, ordered by id.
	Children []*Node
	// Orphan marks a root that should have had a parent: the parent is
	// missing (pruned, or never named) or its link closed a cycle.
	Orphan bool
	// Live marks the nodes of the live path, from the root to the head.
	Live bool
}

// Status says what became of the step run after a checkpoint. Error and
// interrupt writes stay stored on the checkpoint whatever happens next:
// LangGraph keys them apart (idx -1, -3) from the writes of a later
// successful run, so a retry or resume leaves them in place. Whether the
// checkpoint has a child in its own namespace tells the two outcomes apart.
type Status string

const (
	// StatusOK: no error or interrupt write.
	StatusOK Status = "ok"
	// StatusError: the next step failed and was not run again from here. On
	// the head the thread is stuck; off the live path the branch was
	// abandoned after failing.
	StatusError Status = "error"
	// StatusRetried: a failed attempt. The next step failed, then the
	// thread went on from this checkpoint anyway (a retry, new input,
	// update_state or a fork here) and produced a child.
	StatusRetried Status = "retried"
	// StatusInterrupted: paused by interrupt(), waiting for a resume.
	StatusInterrupted Status = "interrupted"
	// StatusResumed: paused by interrupt(), then resumed (or updated and
	// continued) from this checkpoint.
	StatusResumed Status = "resumed"
)

// Status returns what became of the step after n. An error outranks an
// interrupt: when tasks of one step both fail and interrupt, the step failed.
func (n *Node) Status() Status {
	continued := n.next() != nil
	switch {
	case n.HasError && continued:
		return StatusRetried
	case n.HasError:
		return StatusError
	case n.HasInterrupt && continued:
		return StatusResumed
	case n.HasInterrupt:
		return StatusInterrupted
	}
	return StatusOK
}

// next returns the child that continues n's graph: the live child on the live
// path, otherwise the newest child of n's namespace; nil for a leaf.
// Subgraph roots never continue n's graph.
func (n *Node) next() *Node {
	var newest *Node
	for _, c := range n.Children {
		if c.NS != n.NS {
			continue
		}
		if c.Live {
			return c
		}
		newest = c // Children are in id order.
	}
	return newest
}

// Path returns the nodes from n's root down to n, crossing from a subgraph's
// first checkpoint into the parent graph that ran it.
func (n *Node) Path() []*Node {
	var path []*Node
	for p := n; p != nil; p = p.Parent {
		path = append(path, p)
	}
	slices.Reverse(path)
	return path
}

// Entry is a node in the compact form the API sends: keys, the resolved
// parent and the flags, without the metadata "parents" map.
type Entry struct {
	ID string `msgpack:"id" json:"id"`
	NS string `msgpack:"ns" json:"ns"`
	// Parent and ParentNS name the resolved parent, which for a subgraph's
	// first checkpoint is in another namespace; Parent is "" for a root.
	Parent       string `msgpack:"parent" json:"parent"`
	ParentNS     string `msgpack:"parent_ns" json:"parent_ns"`
	Source       string `msgpack:"source" json:"source"`
	Step         int64  `msgpack:"step" json:"step"`
	Status       Status `msgpack:"status" json:"status"`
	HasError     bool   `msgpack:"has_error" json:"has_error"`
	HasInterrupt bool   `msgpack:"has_interrupt" json:"has_interrupt"`
	OnLivePath   bool   `msgpack:"on_live_path" json:"on_live_path"`
	Orphan       bool   `msgpack:"orphan" json:"orphan"`
}

// Entry returns n in compact form.
func (n *Node) Entry() Entry {
	e := Entry{
		ID:           n.ID,
		NS:           n.NS,
		Source:       n.Source,
		Step:         n.Step,
		Status:       n.Status(),
		HasError:     n.HasError,
		HasInterrupt: n.HasInterrupt,
		OnLivePath:   n.Live,
		Orphan:       n.Orphan,
	}
	if n.Parent != nil {
		e.Parent, e.ParentNS = n.Parent.ID, n.Parent.NS
	}
	return e
}

// Entries returns nodes in compact form, in the same order.
func Entries(nodes []*Node) []Entry {
	out := make([]Entry, len(nodes))
	for i, n := range nodes {
		out[i] = n.Entry()
	}
	return out
}
