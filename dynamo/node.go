package dynamo

import (
	"context"
	"fmt"

	"github.com/saver-dev/saver"
)

var _ saver.TreeStore = (*Store)(nil)

// LangGraph stores each special channel's writes at its own negative idx
// (WRITES_IDX_MAP), so a write's idx tells whether it is an error or an
// interrupt without reading its channel.
var (
	errorIdx     = saver.SpecialChannelIdx[saver.ChannelError]
	interruptIdx = saver.SpecialChannelIdx[saver.ChannelInterrupt]
)

// nodeAttrs are the attributes a build of the tree index reads: keys, the
// parent link, the node fields a put copies out of the metadata, the task
// and idx of writes and the expiry. Never a payload, the metadata or the
// channel versions.
var nodeAttrs = []string{attrKind, attrNS, attrID, attrParent, attrSource, attrStep, attrParents, attrTaskID, attrIdx, attrExpiresAt}

// ListNodes returns every checkpoint of the thread as a node, from its tree
// index (treeindex.go): one Query over the index items, projected on their
// entry and expiry, one request per 1 MB page (about 4,000 checkpoints).
// A thread whose index is not whole yet (no marker) is read as before
// the index, and its index made whole. A marker that would expire before
// one of the thread's checkpoints is put again.
func (s *Store) ListNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, error) {
	nodes, err := s.listNodes(ctx, tenant, threadID)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list nodes of thread %s: %w", threadID, err)
	}
	return nodes, nil
}

func (s *Store) listNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, error) {
	pk := partitionKey(tenant, threadID)
	st, err := s.readIndex(ctx, pk)
	if err != nil {
		return nil, err
	}
	if st.marker == nil {
		have := make([]*indexEntry, len(st.singles))
		for i, sg := range st.singles {
			have[i] = sg.e
		}
		return s.buildIndex(ctx, tenant, threadID, have)
	}
	if m := *st.marker; m != 0 && outlives(st.exps, m) {
		if err := s.putMarker(ctx, pk, s.markerExpiry(st.exps), false); err != nil {
			return nil, err
		}
	}
	if len(st.singles) >= s.treePackAt() {
		if err := s.pack(ctx, pk, st); err != nil {
			return nil, err
		}
	}
	return nodesOf(threadID, st.entries), nil
}

// treePackAt is the number of singles at which a tree query packs them.
func (s *Store) treePackAt() int {
	if s.TreePackAt > 0 {
		return s.TreePackAt
	}
	return DefaultTreePackAt
}

// outlives reports whether an entry expiring at one of exps outlives the
// marker's expiry m.
func outlives(exps []int64, m int64) bool {
	for _, e := range exps {
		if e == 0 || e > m {
			return true
		}
	}
	return false
}

// decodeNode returns the node of a checkpoint item read with nodeAttrs.
func decodeNode(threadID string, it item) saver.Node {
	n := saver.Node{
		ThreadID: threadID,
		NS:       getS(it, attrNS),
		ID:       getS(it, attrID),
		ParentID: getS(it, attrParent),
		Source:   getS(it, attrSource),
		Step:     getN(it, attrStep),
	}
	if parents := stringMap(it[attrParents]); len(parents) > 0 {
		n.Parents = parents
	}
	return n
}
