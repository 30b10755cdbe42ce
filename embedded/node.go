package embedded

import (
	"bytes"
	"context"
	"fmt"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
)

var _ saver.TreeStore = (*Store)(nil)

// LangGraph stores each special channel's writes at its own negative idx
// (WRITES_IDX_MAP), so the keys of a checkpoint's writes tell whether it has
// an error or an interrupt. These are the encoded last key components.
var (
	errorIdx     = key(idxComponent(saver.SpecialChannelIdx[saver.ChannelError]))
	interruptIdx = key(idxComponent(saver.SpecialChannelIdx[saver.ChannelInterrupt]))
)

// ListNodes returns every live checkpoint of the thread as a node, from the
// thread's tree index alone: no checkpoint or write record is read. The
// index of a thread read lately comes from the tree cache (treecache.go).
func (s *Store) ListNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, error) {
	t, err := s.thread(ctx, tenant, threadID)
	if err != nil {
		return nil, err
	}
	return t.live(s.Now()), nil
}

// Tree returns the thread's tree: ListNodes's nodes built, kept in the tree
// cache with the thread's index until a write or an expiry changes them.
// An unknown thread's tree has no node.
func (s *Store) Tree(ctx context.Context, tenant, threadID string) (*tree.Tree, error) {
	t, err := s.thread(ctx, tenant, threadID)
	if err != nil {
		return nil, err
	}
	return t.tree(s.Now()), nil
}

// thread returns the thread's tree index from the cache, or scanned and
// kept there (unless a write raced the scan, or it is too large).
func (s *Store) thread(ctx context.Context, tenant, threadID string) (*cachedThread, error) {
	prefix := key(tenant, threadID)
	if t, ok := s.trees.get(prefix); ok {
		return t, nil
	}
	gen := s.trees.gen(prefix)
	var nodes []cachedNode
	err := s.view(ctx, "list nodes", func(tx kvTx) error {
		nodes = nodes[:0]
		// last is the key, after prefix, of nodes' last element: the node
		// the flags that follow belong to.
		var last []byte
		return scanPrefix(ctx, tx.Bucket(bucketNodes), prefix, func(k, v []byte) error {
			rest := k[len(prefix):]
			ns, tail, err := nextComponent(rest)
			if err != nil {
				return err
			}
			id, tail, err := nextComponent(tail)
			if err != nil {
				return err
			}
			if len(tail) == 0 {
				c := cachedNode{node: saver.Node{ThreadID: threadID, NS: ns, ID: id}}
				if c.exp, err = decodeNode(&c.node, v); err != nil {
					return fmt.Errorf("decode node %s: %w", id, err)
				}
				nodes = append(nodes, c)
				last = append(last[:0], rest...)
				return nil
			}
			// A flag: its node is the last one listed, unless that one was
			// never put.
			if last == nil || !bytes.HasPrefix(rest, last) || len(rest)-len(tail) != len(last) {
				return nil
			}
			task := bytes.IndexByte(tail, sep)
			if task < 0 {
				return errBadKey
			}
			exp, err := recordExpiry(v)
			if err != nil {
				return err
			}
			n := &nodes[len(nodes)-1]
			switch idx := tail[task+1:]; {
			case bytes.Equal(idx, errorIdx):
				n.errExp, n.hasErr = laterFlag(n.hasErr, n.errExp, exp), true
			case bytes.Equal(idx, interruptIdx):
				n.intExp, n.hasInt = laterFlag(n.hasInt, n.intExp, exp), true
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if s.treeScanHook != nil {
		s.treeScanHook()
	}
	t := newCachedThread(string(prefix), nodes)
	s.trees.keep(t, gen)
	return t, nil
}

// laterFlag is the expiry of a node's flags of one kind once another, of
// expiry exp, is met: the node shows the flag while any of them lives.
func laterFlag(had bool, was, exp int64) int64 {
	if !had {
		return exp
	}
	return saver.Later(was, exp)
}

// decodeNode reads a checkpoint record's parent link and the metadata
// fields a node shows, skipping the body, the channel versions and every
// other metadata value by their lengths. It returns the record's expiry.
func decodeNode(n *saver.Node, v []byte) (expiresAt int64, err error) {
	s := skim{b: v}
	fields := s.mapLen()
	for i := uint64(0); i < fields && s.err == nil; i++ {
		switch string(s.strBytes()) {
		case fieldExpiresAt:
			var ok bool
			if expiresAt, ok = s.next().integer(); !ok {
				s.fail()
			}
		case "parent_id":
			n.ParentID = s.str()
		case "metadata":
			s.nodeMetadata(n)
		default:
			s.skip()
		}
	}
	return expiresAt, s.err
}

// nodeMetadata reads source, step and parents from a metadata map. Values
// of other types read as absent; a step stored as a float is truncated.
func (s *skim) nodeMetadata(n *saver.Node) {
	entries := s.mapLen()
	for i := uint64(0); i < entries && s.err == nil; i++ {
		name := s.strBytes()
		v := s.next()
		switch {
		case string(name) == "source" && v.kind == kindStr:
			n.Source = string(v.data)
		case string(name) == "step":
			n.Step, _ = v.integer()
		case string(name) == "parents" && v.kind == kindMap:
			n.Parents = s.parents(v.n)
			continue
		}
		s.skipRest(v)
	}
}

// parents reads the entries of a parents map, keeping those whose key and
// value are strings; nil if none is.
func (s *skim) parents(entries uint64) map[string]string {
	var out map[string]string
	for i := uint64(0); i < entries && s.err == nil; i++ {
		k := s.next()
		s.skipRest(k)
		v := s.next()
		s.skipRest(v)
		if k.kind == kindStr && v.kind == kindStr {
			if out == nil {
				out = make(map[string]string)
			}
			out[string(k.data)] = string(v.data)
		}
	}
	return out
}

// recordRunID skims a checkpoint record's metadata run_id, stepping over
// everything else by its length; ok is false when it has none that is a
// string.
func recordRunID(v []byte) (run string, ok bool, err error) {
	s := skim{b: v}
	fields := s.mapLen()
	for i := uint64(0); i < fields && s.err == nil; i++ {
		if string(s.strBytes()) != "metadata" {
			s.skip()
			continue
		}
		entries := s.mapLen()
		for j := uint64(0); j < entries && s.err == nil; j++ {
			name := s.strBytes()
			v := s.next()
			if string(name) == "run_id" && v.kind == kindStr {
				return string(v.data), true, nil
			}
			s.skipRest(v)
		}
		break
	}
	if s.err != nil {
		return "", false, fmt.Errorf("decode run id: %w", s.err)
	}
	return "", false, nil
}
