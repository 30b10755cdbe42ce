package dynamo

import (
	"github.com/saver-dev/saver"
)

// threadChains is a thread's checkpoints as the delta-aware maintenance
// rules see them (saver.ChainNode), by namespace and id, built from the
// thread's items as threadItems read them, with the parent links.
type threadChains struct {
	nodes    map[string]map[string]*saver.ChainNode
	children map[string]map[string][]string
}

// chainsOfItems builds the chains of a thread from all its items: a
// channel is seeded at a checkpoint when the blob at its version there is
// stored, live and not empty.
func (s *Store) chainsOfItems(tenant string, items []item) (*threadChains, error) {
	present := map[string]bool{} // blob sort keys
	for _, it := range items {
		if getS(it, attrKind) != itemBlob || s.expired(getN(it, attrExpiresAt)) {
			continue
		}
		var l loads
		b, err := decodeBlob(it, &l)
		if err != nil {
			return nil, err
		}
		present[getS(it, attrSK)] = b.Value.Type != saver.EmptyType
	}
	tc := &threadChains{nodes: map[string]map[string]*saver.ChainNode{}, children: map[string]map[string][]string{}}
	for _, it := range items {
		if getS(it, attrKind) != itemCheckpoint || s.expired(getN(it, attrExpiresAt)) {
			continue
		}
		var l loads // the body is not needed
		cp, err := decodeCheckpoint(tenant, it, &l)
		if err != nil {
			return nil, err
		}
		n := &saver.ChainNode{ID: cp.ID, ParentID: cp.ParentID, Seeds: map[string]bool{}}
		for ch, v := range cp.ChannelVersions {
			n.Seeds[ch] = present[blobKey(cp.NS, ch, v)]
		}
		n.Needs = saver.ChainNeeds(cp.Metadata, cp.ChannelVersions, func(ch string) bool { return n.Seeds[ch] })
		if tc.nodes[cp.NS] == nil {
			tc.nodes[cp.NS], tc.children[cp.NS] = map[string]*saver.ChainNode{}, map[string][]string{}
		}
		tc.nodes[cp.NS][cp.ID] = n
		if cp.ParentID != "" {
			tc.children[cp.NS][cp.ParentID] = append(tc.children[cp.NS][cp.ParentID], cp.ID)
		}
	}
	return tc, nil
}

// lookup returns the node lookup of namespace ns, for saver.Chain.
func (tc *threadChains) lookup(ns string) func(id string) (*saver.ChainNode, error) {
	return func(id string) (*saver.ChainNode, error) { return tc.nodes[ns][id], nil }
}

// chain returns the saver.Chain of checkpoint id of namespace ns.
func (tc *threadChains) chain(ns, id string) ([]string, error) {
	return saver.Chain(tc.nodes[ns][id], tc.lookup(ns))
}
