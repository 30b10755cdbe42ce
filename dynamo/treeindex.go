package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// The tree index: what tree queries read, kept apart from the checkpoints
// and writes so that a query of a long thread reads a hundred-odd bytes a
// checkpoint instead of its body, metadata and versions, and no write at
// all but its errors and interrupts. A 10,000-checkpoint thread's index is
// about 2 MB, three Query pages, against tens of MB of items.
//
// Each checkpoint item has an index item, and so has each error or
// interrupt write (the flag writes of a node), under the same sort key
// with kind "n" in place of "c":
//
//	SK  n!<ns>!<checkpoint id>!                     node
//	    n!<ns>!<checkpoint id>!w!<task id>!<idx>!   flag
//	    n!                                          marker
//
// with kind "index", the checkpoint's or write's expires_at, and in node
// the indexEntry msgpacked: one binary attribute reads in half the time of
// the same fields as attributes of their own (measured on the local
// emulator: 10,000 entries in 2 Queries and about 200 ms, against 3 and
// 450 ms). Keys are per checkpoint and per write, so replicas writing one
// thread never contend on the index, and every index item is written in
// the same transaction as the item it stands for (PutCheckpoint,
// PutWrites, SetExpiry), beside the tombstone checks of puts
// (tombstone.go), glued to it so that no chunking parts them (2 write
// units more a checkpoint, and per error or interrupt). Deletions delete
// the index items first (DeleteForRuns, DeleteThread), and those of the
// puts that raced them with the rest (buryStragglers); prune keeps those of
// what it keeps, and CopyThread copies them with the rest, the marker
// last (and no tombstone: they live in a partition of their own).
//
// The marker says the thread's index is whole. A thread written before
// the index, or whose marker expired, gets it on its first tree query
// (buildIndex): the query reads the thread's checkpoints and writes as it
// did before the index, inserts the index items that are missing and
// deletes those that stand for nothing, each beside a condition check on
// its checkpoint or write so that a concurrent deletion or put wins, then
// puts the marker. The marker lives twice as long as the thread's
// longest-lived checkpoint (as blobs do), and a query that finds a
// checkpoint outliving it puts it again, so it expires with the thread.
const (
	kindIndex = "n"
	itemIndex = "index"
	attrNode  = "node"
)

// indexEntry is the node attribute of an index item.
type indexEntry struct {
	NS      string            `msgpack:"n,omitempty"`
	ID      string            `msgpack:"i,omitempty"`
	Parent  string            `msgpack:"p,omitempty"`
	Source  string            `msgpack:"s,omitempty"`
	Step    int64             `msgpack:"t,omitempty"`
	Parents map[string]string `msgpack:"r,omitempty"`
	// A flag's: the task and idx of its write (errorIdx or interruptIdx).
	Task string `msgpack:"k,omitempty"`
	Idx  int64  `msgpack:"x,omitempty"`
	// The marker's.
	Marker bool `msgpack:"m,omitempty"`
}

// sk returns the sort key of the entry's index item.
func (e *indexEntry) sk() string {
	switch {
	case e.Marker:
		return indexMarkerKey
	case e.Idx != 0:
		return indexKey(writeKey(e.NS, e.ID, e.Task, e.Idx))
	}
	return indexKey(checkpointKey(e.NS, e.ID))
}

// indexMarkerKey is the sort key of a thread's marker.
var indexMarkerKey = key(kindIndex)

// indexKey returns the sort key of the index item of the checkpoint or
// write at sk.
func indexKey(sk string) string { return kindIndex + strings.TrimPrefix(sk, kindCheckpoint) }

// indexedKey returns the sort key of the checkpoint or write an index
// item at sk stands for.
func indexedKey(sk string) string { return kindCheckpoint + strings.TrimPrefix(sk, kindIndex) }

// isFlagIdx reports whether a write at idx flags its node.
func isFlagIdx(idx int64) bool { return idx == errorIdx || idx == interruptIdx }

// isFlagKey reports whether a write's sort key ends in the idx of an error
// or an interrupt (parts before it are escaped, so never hold sep).
func isFlagKey(sk string) bool {
	return strings.HasSuffix(sk, key("", fmt.Sprint(errorIdx))) || strings.HasSuffix(sk, key("", fmt.Sprint(interruptIdx)))
}

// indexItem returns the index item of e in partition pk.
func indexItem(pk types.AttributeValue, e *indexEntry, exp int64) (item, error) {
	b, err := msgpack.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode index entry: %w", err)
	}
	it := item{attrPK: pk, attrSK: attrS(e.sk()), attrKind: attrS(itemIndex), attrNode: &types.AttributeValueMemberB{Value: b}}
	if exp != 0 {
		it[attrExpiresAt] = attrN(exp)
	}
	return it, nil
}

// nodeEntry returns the index entry of a checkpoint item (whole, or read
// with nodeAttrs).
func nodeEntry(cp item) *indexEntry {
	return &indexEntry{
		NS: getS(cp, attrNS), ID: getS(cp, attrID), Parent: getS(cp, attrParent),
		Source: getS(cp, attrSource), Step: getN(cp, attrStep), Parents: stringMap(cp[attrParents]),
	}
}

// nodeOp returns the put of the index item of a checkpoint item, with the
// expiry exp.
func nodeOp(cp item, exp int64) (awsx.WriteOp, error) {
	it, err := indexItem(cp[attrPK], nodeEntry(cp), exp)
	return awsx.WriteOp{Item: it}, err
}

// flagOp returns the put of the index item of a write item (read with its
// namespace, checkpoint id, task id and idx) with the expiry exp, nil
// unless it is an error or an interrupt.
func flagOp(w item, exp int64) (*awsx.WriteOp, error) {
	idx := getN(w, attrIdx)
	if !isFlagIdx(idx) || getS(w, attrKind) != itemWrite {
		return nil, nil
	}
	it, err := indexItem(w[attrPK], &indexEntry{NS: getS(w, attrNS), ID: getS(w, attrID), Task: getS(w, attrTaskID), Idx: idx}, exp)
	if err != nil {
		return nil, err
	}
	return &awsx.WriteOp{Item: it}, nil
}

// flagOps returns the puts of the index items of the error and interrupt
// writes among ops, puts of write items.
func flagOps(ops []awsx.WriteOp, exp int64) ([]awsx.WriteOp, error) {
	var out []awsx.WriteOp
	for _, op := range ops {
		f, err := flagOp(op.Item, exp)
		if err != nil {
			return nil, err
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	return out, nil
}

// withIndexKeys returns items (keys and kinds of checkpoints and writes
// about to be deleted) with the keys of their index items, which
// deleteItems deletes first.
func withIndexKeys(items []item) []item {
	out := make([]item, 0, len(items)+len(items)/4)
	for _, it := range items {
		sk := getS(it, attrSK)
		switch kind := getS(it, attrKind); {
		case kind == itemCheckpoint, kind == itemWrite && isFlagKey(sk):
			out = append(out, item{attrPK: it[attrPK], attrSK: attrS(indexKey(sk)), attrKind: attrS(itemIndex)})
		}
	}
	return append(out, items...)
}

// keepIndex adds to keep (sort keys that prune keeps) the index items of
// the checkpoints and writes it keeps, and the marker.
func keepIndex(keep map[string]bool) {
	for sk := range keep {
		if strings.HasPrefix(sk, key(kindCheckpoint)) {
			keep[indexKey(sk)] = true
		}
	}
	keep[indexMarkerKey] = true
}

// isMarker reports whether it is a thread's marker.
func isMarker(it item) bool { return getS(it, attrSK) == indexMarkerKey }

// indexAttrs are the attributes a tree query reads of the index: a
// single's entry, a page's id and entries (treepage.go), the marker's pages
// and their count, and expiries.
var indexAttrs = []string{attrNode, attrExpiresAt, attrPage, attrPageID, attrPages, attrPageVer}

// readIndex reads the thread's index: the marker, the singles and the
// pages in one Query (one request per 1 MB page), merged into the live
// entries with their expiries (treepage.go). Without a live marker, the
// entries are the singles alone.
func (s *Store) readIndex(ctx context.Context, pk string) (*treeState, error) {
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :n)"),
		ExpressionAttributeValues: item{":pk": attrS(pk), ":n": attrS(indexMarkerKey)},
	}
	project(&in.ProjectionExpression, &in.ExpressionAttributeNames, indexAttrs)
	st := &treeState{found: map[string][]pageEntry{}}
	st.shadows = map[entryKey]bool{}
	var (
		pages []item
		derr  error
	)
	err := s.table.Query(ctx, in, func(items []item) bool {
		for _, it := range items {
			if _, ok := it[attrPage]; ok {
				pages = append(pages, it)
				continue
			}
			exp := getN(it, attrExpiresAt)
			b, _ := it[attrNode].(*types.AttributeValueMemberB)
			if b == nil {
				derr = fmt.Errorf("index item without %s", attrNode)
				return false
			}
			e := &indexEntry{}
			if derr = msgpack.Unmarshal(b.Value, e); derr != nil {
				derr = fmt.Errorf("decode index entry: %w", derr)
				return false
			}
			if e.Marker {
				if !s.expired(exp) {
					st.marker = &exp
					st.ver, st.pages = getN(it, attrPageVer), pagesOf(it)
				}
				continue
			}
			st.shadows[keyOfEntry(e)] = true
			if s.expired(exp) {
				continue
			}
			st.singles = append(st.singles, single{e: e, exp: exp, node: b.Value})
		}
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	if st.marker != nil {
		listed := make(map[string]bool, len(st.pages))
		for _, id := range st.pages {
			listed[id] = true
		}
		for _, it := range pages {
			if id := getS(it, attrPageID); listed[id] {
				es, err := decodePage(it)
				if err != nil {
					return nil, err
				}
				st.found[id] = es
			}
		}
	}
	s.merge(st)
	return st, nil
}

// nodesOf returns the nodes of a thread's live index entries: the flags
// of a checkpoint that has no node are passed over.
func nodesOf(threadID string, entries []*indexEntry) []saver.Node {
	flags := map[[2]string]int64{} // errorIdx | interruptIdx bits, by node
	n := 0
	for _, e := range entries {
		switch {
		case e.Idx == 0:
			n++
		case e.Idx == errorIdx:
			flags[[2]string{e.NS, e.ID}] |= 1
		case e.Idx == interruptIdx:
			flags[[2]string{e.NS, e.ID}] |= 2
		}
	}
	nodes := make([]saver.Node, 0, n)
	for _, e := range entries {
		if e.Idx != 0 {
			continue
		}
		n := saver.Node{ThreadID: threadID, NS: e.NS, ID: e.ID, ParentID: e.Parent, Source: e.Source, Step: e.Step}
		if len(e.Parents) > 0 {
			n.Parents = e.Parents
		}
		if f := flags[[2]string{e.NS, e.ID}]; f != 0 {
			n.HasError, n.HasInterrupt = f&1 != 0, f&2 != 0
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// markerExpiry is the expiry of a marker of a thread whose live index
// entries have exps: twice the remaining life of the longest-lived, never
// when one never expires.
func (s *Store) markerExpiry(exps []int64) int64 {
	var longest int64
	for _, e := range exps {
		if e == 0 {
			return 0
		}
		longest = max(longest, e)
	}
	return saver.NewBlobExpiry(longest, s.Now())
}

// putMarker sets the thread's marker to expire at exp, keeping its pages
// (treepage.go); with dropPages, it lists none and counts the change.
func (s *Store) putMarker(ctx context.Context, pk string, exp int64, dropPages bool) error {
	b, err := msgpack.Marshal(&indexEntry{Marker: true})
	if err != nil {
		return fmt.Errorf("encode index entry: %w", err)
	}
	u := awsx.NewExpr("u")
	set := fmt.Sprintf("%s = %s, %s = %s", u.Name(attrKind), u.Value(attrS(itemIndex)), u.Name(attrNode), u.Value(&types.AttributeValueMemberB{Value: b}))
	var remove []string
	if exp != 0 {
		set += fmt.Sprintf(", %s = %s", u.Name(attrExpiresAt), u.Value(attrN(exp)))
	} else {
		remove = append(remove, u.Name(attrExpiresAt))
	}
	if dropPages {
		set += fmt.Sprintf(", %s = if_not_exists(%s, %s) + %s", u.Name(attrPageVer), u.Name(attrPageVer), u.Value(attrN(0)), u.Value(attrN(1)))
		remove = append(remove, u.Name(attrPages))
	}
	u.Text = "SET " + set
	if len(remove) > 0 {
		u.Text += " REMOVE " + strings.Join(remove, ", ")
	}
	return s.table.Transact(ctx, []awsx.WriteOp{{Item: item{attrPK: attrS(pk), attrSK: attrS(indexMarkerKey)}, Set: u}})
}

// buildIndex makes the index of a thread whose marker is missing whole,
// from the thread's checkpoints and writes read as before the index (a
// Query projected on nodeAttrs, one per 1 MB page), and returns its nodes.
// have are the live entries of its index, read before those items. An
// index item that is missing is put if still absent, beside a check that
// its checkpoint or write exists; one that stands for no item is deleted,
// beside a check that none appeared: in transactions of 50 such pairs,
// those whose check failed left out when they go again. Then the marker,
// unless the thread has no live checkpoint.
func (s *Store) buildIndex(ctx context.Context, tenant, threadID string, have []*indexEntry) ([]saver.Node, error) {
	pk := partitionKey(tenant, threadID)
	nodes, want, exps, err := s.scanNodes(ctx, tenant, threadID)
	if err != nil {
		return nil, err
	}
	had := make(map[string]bool, len(have))
	for _, e := range have {
		had[e.sk()] = true
	}
	var ops []awsx.WriteOp
	for i, e := range want {
		sk := e.sk()
		if had[sk] {
			delete(had, sk)
			continue
		}
		it, err := indexItem(attrS(pk), e, exps[i])
		if err != nil {
			return nil, err
		}
		ops = append(ops,
			awsx.WriteOp{Item: item{attrPK: attrS(pk), attrSK: attrS(indexedKey(sk))}, Check: true, Cond: s.condExists(true), Glue: true},
			awsx.WriteOp{Item: it, Cond: s.condExists(false)})
	}
	for sk := range had { // stands for nothing
		ops = append(ops,
			awsx.WriteOp{Item: item{attrPK: attrS(pk), attrSK: attrS(indexedKey(sk))}, Check: true, Cond: s.condExists(false), Glue: true},
			awsx.WriteOp{Item: item{attrPK: attrS(pk), attrSK: attrS(sk)}, Delete: true})
	}
	if err := s.sendPairs(ctx, ops); err != nil {
		return nil, err
	}
	if len(nodes) > 0 {
		if err := s.putMarker(ctx, pk, s.markerExpiry(exps), true); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// maxPairs is the number of check-and-write pairs of a build's transaction.
const maxPairs = awsx.MaxTransactItems / 2

// sendPairs sends check-and-write pairs, maxPairs a transaction, leaving
// out those that failed (the item checked changed since it was read, or
// the index item was put meanwhile: the index is right either way) and
// sending the others again.
func (s *Store) sendPairs(ctx context.Context, ops []awsx.WriteOp) error {
	for len(ops) > 0 {
		n := min(len(ops), 2*maxPairs)
		err := s.table.Transact(ctx, ops[:n])
		var cf *awsx.CondFailed
		if errors.As(err, &cf) {
			var rest []awsx.WriteOp
			for i := 0; i < n; i += 2 {
				_, a := cf.Items[i]
				_, b := cf.Items[i+1]
				if !a && !b {
					rest = append(rest, ops[i], ops[i+1])
				}
			}
			ops = append(rest, ops[n:]...)
			continue
		}
		if err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// condExists returns the condition that the item exists and is live, or
// that it does not (absent or expired).
func (s *Store) condExists(exists bool) *awsx.Expr {
	c := awsx.NewExpr("e")
	gone := fmt.Sprintf("(attribute_not_exists(%s) OR %s <= %s)", c.Name(attrPK), c.Name(attrExpiresAt), c.Value(attrN(s.Now().Unix())))
	c.Text = gone
	if exists {
		c.Text = "NOT " + gone
	}
	return c
}

// scanNodes returns the nodes of the thread from its checkpoints and
// writes, as ListNodes did before the index, with the index entries they
// make and the entries' expiries: one Query over the thread's checkpoints
// and writes (one request per 1 MB page) that projects nodeAttrs only.
// Writes sort right after their checkpoint, so one pass flags each
// checkpoint from the writes that follow it; writes on a checkpoint that
// was never put follow another id and are passed over.
func (s *Store) scanNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, []*indexEntry, []int64, error) {
	in := &dynamodb.QueryInput{
		KeyConditionExpression: ptr("PK = :pk AND begins_with(SK, :c)"),
		ExpressionAttributeValues: item{
			":pk": attrS(partitionKey(tenant, threadID)),
			":c":  attrS(threadCheckpointsPrefix()),
		},
	}
	project(&in.ProjectionExpression, &in.ExpressionAttributeNames, nodeAttrs)
	var (
		nodes   = []saver.Node{}
		entries []*indexEntry
		exps    []int64
		cur     = -1 // index in nodes of the checkpoint the next writes follow
	)
	err := s.table.Query(ctx, in, func(items []item) bool {
		for _, it := range items {
			exp := getN(it, attrExpiresAt)
			if s.expired(exp) {
				continue
			}
			ns, id := getS(it, attrNS), getS(it, attrID)
			switch getS(it, attrKind) {
			case itemCheckpoint:
				nodes = append(nodes, decodeNode(threadID, it))
				cur = len(nodes) - 1
				entries, exps = append(entries, nodeEntry(it)), append(exps, exp)
			case itemWrite:
				idx := getN(it, attrIdx)
				if !isFlagIdx(idx) {
					continue
				}
				entries = append(entries, &indexEntry{NS: ns, ID: id, Task: getS(it, attrTaskID), Idx: idx})
				exps = append(exps, exp)
				if cur < 0 || nodes[cur].NS != ns || nodes[cur].ID != id {
					continue
				}
				switch idx {
				case errorIdx:
					nodes[cur].HasError = true
				case interruptIdx:
					nodes[cur].HasInterrupt = true
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return nodes, entries, exps, nil
}
