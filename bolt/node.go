package bolt

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/saver-dev/saver"
)

var _ saver.TreeStore = (*Store)(nil)

// LangGraph stores each special channel's writes at its own negative idx
// (WRITES_IDX_MAP), so the keys of a checkpoint's writes tell whether it has
// an error or an interrupt. These are the encoded last key components.
var (
	errorIdx     = key(idxComponent(-1)) // saver.ChannelError
	interruptIdx = key(idxComponent(-3)) // saver.ChannelInterrupt
)

// ListNodes returns every live checkpoint of the thread as a node. It skims
// the node fields and the expiry out of each checkpoint record in place (see
// decodeNode) and takes the flags from the keys of the thread's live writes:
// no payload is decoded or copied.
func (s *Store) ListNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, error) {
	prefix := key(tenant, threadID)
	var nodes []saver.Node
	err := s.view(ctx, "list nodes", func(tx kvTx) error {
		now := s.Now()
		// keys[i] is the key of nodes[i] after the thread prefix: (ns, id).
		var keys [][]byte
		nodes = []saver.Node{}
		err := scanPrefix(ctx, tx.Bucket(bucketCheckpoints), prefix, func(k, v []byte) error {
			rest := k[len(prefix):]
			ns, tail, err := nextComponent(rest)
			if err != nil {
				return err
			}
			id, tail, err := nextComponent(tail)
			if err != nil || len(tail) != 0 {
				return errBadKey
			}
			node := saver.Node{ThreadID: threadID, NS: ns, ID: id}
			exp, err := decodeNode(&node, v)
			if err != nil {
				return fmt.Errorf("decode checkpoint %s: %w", node.ID, err)
			}
			if !saver.Expired(exp, now) {
				nodes = append(nodes, node)
				keys = append(keys, bytes.Clone(rest)) // the cursor's key is valid until it moves
			}
			return nil
		})
		if err != nil {
			return err
		}
		return flagNodes(ctx, tx.Bucket(bucketWrites).Cursor(), prefix, nodes, keys, now)
	})
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// flagNodes sets HasError and HasInterrupt from the keys of the thread's
// writes. A write's key is its checkpoint's key followed by (task_id, idx),
// so writes sort in the order of their checkpoints, and one pass over both
// finds each write's checkpoint without a lookup. Writes on checkpoints that
// were never put (or have expired) fall between nodes and are passed over.
// Only an error or interrupt write's value is read, for its expiry.
func flagNodes(ctx context.Context, c kvCursor, prefix []byte, nodes []saver.Node, keys [][]byte, now time.Time) error {
	i, n := 0, 0
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && i < len(keys); k, v = c.Next() {
		if err := checkCtx(ctx, n); err != nil {
			return err
		}
		n++
		rest := k[len(prefix):]
		// A checkpoint key sorts below the keys of its writes, and a key
		// that is neither below nor a prefix of this write's belongs to a
		// later checkpoint.
		for i < len(keys) && !bytes.HasPrefix(rest, keys[i]) && bytes.Compare(keys[i], rest) < 0 {
			i++
		}
		if i == len(keys) || !bytes.HasPrefix(rest, keys[i]) {
			continue
		}
		own := rest[len(keys[i]):]
		task := bytes.IndexByte(own, sep)
		if task < 0 {
			return errBadKey
		}
		idx := own[task+1:]
		isError, isInterrupt := bytes.Equal(idx, errorIdx), bytes.Equal(idx, interruptIdx)
		if !isError && !isInterrupt {
			continue
		}
		if ok, err := live(v, now); !ok {
			if err != nil {
				return err
			}
			continue
		}
		nodes[i].HasError = nodes[i].HasError || isError
		nodes[i].HasInterrupt = nodes[i].HasInterrupt || isInterrupt
	}
	return nil
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
