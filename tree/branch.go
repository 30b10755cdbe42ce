package tree

import (
	"slices"
	"strings"
)

// Branch is an abandoned branch of the root namespace: work that LangGraph
// will no longer resume, because a time travel, fork or update_state on an
// earlier checkpoint made a newer head elsewhere.
type Branch struct {
	// ForkPoint is the nearest ancestor on the live path, where the thread
	// left this work behind; "" if the branch's tree has no live path (an
	// orphan, or a second root).
	ForkPoint string `msgpack:"fork_point" json:"fork_point"`
	// From is the checkpoint the branch's first node hangs from: ForkPoint,
	// or a checkpoint of another abandoned branch it split off; "" if the
	// first node is a root.
	From string `msgpack:"from" json:"from"`
	// IDs are the branch's checkpoints, from the first off From down to
	// the leaf.
	IDs []string `msgpack:"checkpoint_ids" json:"checkpoint_ids"`
	// Status is the leaf's: StatusError for work abandoned after failing,
	// StatusInterrupted for work abandoned while waiting for a resume.
	Status Status `msgpack:"status" json:"status"`
}

// Abandoned returns one branch per leaf of the root namespace that is not on
// the live path, ordered by the id of the branch's first node (when the
// branch was started).
//
// Branches do not overlap. Where an abandoned branch itself forks, the newest
// child continues it, just as LangGraph resumes from the newest checkpoint,
// and every older child starts a branch of its own whose From is the fork.
// So every checkpoint of the root namespace is on the live path or in exactly
// one branch, and the answer stays linear in the size of the tree.
func (t *Tree) Abandoned() []Branch {
	forkPoint := make(map[*Node]string)
	var out []Branch
	for i := range t.nodes {
		leaf := &t.nodes[i]
		if leaf.NS != "" || leaf.Live || leaf.next() != nil {
			continue
		}
		b := Branch{Status: leaf.Status()}
		n := leaf
		for {
			b.IDs = append(b.IDs, n.ID)
			p := n.Parent
			if p == nil {
				break
			}
			if p.Live || p.next() != n {
				b.From = p.ID
				b.ForkPoint = t.forkPoint(p, forkPoint)
				break
			}
			n = p
		}
		slices.Reverse(b.IDs)
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Branch) int { return strings.Compare(a.IDs[0], b.IDs[0]) })
	return out
}

// forkPoint returns the id of n's nearest live ancestor-or-self, or "". It
// memoizes every node it passes, so that branches off branches do not walk
// the same chain again.
func (t *Tree) forkPoint(n *Node, memo map[*Node]string) string {
	var seen []*Node
	id := ""
	for p := n; p != nil; p = p.Parent {
		if p.Live {
			id = p.ID
			break
		}
		if m, ok := memo[p]; ok {
			id = m
			break
		}
		seen = append(seen, p)
	}
	for _, p := range seen {
		memo[p] = id
	}
	return id
}
