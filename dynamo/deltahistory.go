package dynamo

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// historyAttrs are what a delta history reads of a namespace's checkpoints
// and writes: never a checkpoint's body or metadata.
var historyAttrs = []string{attrSK, attrKind, attrID, attrParent, attrVersions, attrBrought, attrExpiresAt,
	attrTaskID, attrTaskPath, attrIdx, attrChannel, attrValue, attrBundle}

// DeltaHistory answers a delta history with a bounded number of requests,
// whatever the chain's depth: Query pages of the namespace read backwards
// from the target (projected on historyAttrs), which stop once the chain
// reaches, for every channel, the checkpoint that holds its seed; then one
// BatchGetItem of the seeds, and the offloaded payloads among them and the
// writes. Which ancestor holds a value is known from the attrBrought of the
// checkpoint that brought the channel's version there; a seed read that
// finds no value after all (the hint is missing, or the blob expired) makes
// the walk go on past it.
//
// The chain stops at the ancestor whose writes reach in.MaxBytes (the
// channels still walking then say where they go on), so that the scan
// holds about that much and a Query page; what it reads is charged to
// ctx's budget (saver.Take) as the pages arrive.
//
// Checkpoint ids that LangGraph makes grow along the chain, so the
// ancestors all sort below the target. A parent that sorts above its child
// (ids from elsewhere) sends the walk to one GetTuple per ancestor instead.
func (s *Store) DeltaHistory(ctx context.Context, in saver.DeltaRequest) (map[string]*saver.DeltaHistory, error) {
	out, err := s.deltaHistory(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("dynamo: delta history of thread %s: %w", in.ThreadID, err)
	}
	return out, nil
}

func (s *Store) deltaHistory(ctx context.Context, in saver.DeltaRequest) (map[string]*saver.DeltaHistory, error) {
	if len(in.Channels) == 0 {
		return saver.NewDeltaWalk(nil).Result()
	}
	h := &historyScan{s: s, ns: in.NS, pk: partitionKey(in.Tenant, in.ThreadID), target: in.ID,
		nodes: map[string]*histNode{}, absent: map[seedAt]bool{}, holding: map[[2]string]bool{}, seedExp: map[seedAt]int64{}}
	h.epoch = s.chains.epoch(h.pk)
	h.in = &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: item{":pk": attrS(h.pk), ":lo": attrS(nsPrefix(in.NS)), ":hi": attrS(nsEnd(in.NS))},
		ScanIndexForward:          ptr(false),
	}
	if in.ID != "" {
		h.hi = checkpointKey(in.NS, in.ID)
		h.in.ExpressionAttributeValues[":hi"] = attrS(h.hi)
	}
	// With the older part of the chain cached, read only what is newer:
	// down to the newest checkpoint cached below the target, and further
	// only if the chain goes elsewhere (h.more).
	lo := ""
	if b := s.chains.below(nsKey{h.pk, in.NS}, in.ID); b != "" {
		lo = afterCheckpoint(in.NS, b)
	}
	// The client holds the history at in.Known: the chain ends there
	// (its checkpoint and writes read, nothing below), unless it goes
	// elsewhere.
	if in.Known != "" && (in.ID == "" || in.Known < in.ID) {
		lo = max(lo, checkpointKey(in.NS, in.Known))
	}
	if lo != "" {
		h.bounded = true
		h.in.ExpressionAttributeValues[":lo"] = attrS(lo)
	}
	project(&h.in.ProjectionExpression, &h.in.ExpressionAttributeNames, historyAttrs)
	for {
		plan, err := h.plan(ctx, in.Channels, in.MaxBytes, in.Known)
		if err != nil {
			return nil, err
		}
		if plan.outOfOrder {
			return s.historyByTuples(ctx, in)
		}
		if plan.chain == nil { // no target
			walk := saver.NewDeltaWalk(in.Channels)
			walk.Known(in.Known)
			return walk.Result()
		}
		seeds, err := h.readSeeds(ctx, plan.candidates)
		if err != nil {
			return nil, err
		}
		if seeds != nil {
			return h.collect(ctx, in, plan, seeds)
		}
		// A candidate held no value: plan again without it.
	}
}

// afterCheckpoint sorts after the keys of checkpoint id of ns and its
// writes, and before those of every larger id: its id part ends in sep+1,
// a byte no escaped part holds, where theirs ends in sep or goes on with a
// byte above esc.
func afterCheckpoint(ns, id string) string { return beforeBound(ns, id) + string(rune(sep+1)) }

// nsEnd sorts after every key of namespace ns and before the next
// namespace's: nsPrefix with its last sep raised by one (a byte no
// escaped part holds).
func nsEnd(ns string) string {
	p := nsPrefix(ns)
	return p[:len(p)-1] + string(rune(sep+1))
}

// histNode is a checkpoint as the history scan read it, with its writes.
type histNode struct {
	key      string
	id       string
	parent   string
	versions map[string]string
	brought  map[string]bool // nil: the item predates attrBrought
	writes   []item
	exp      int64 // the earliest expiry of its items read (0: never)
	// cached, when not nil, is the checkpoint as the chain cache holds it
	// (writes decoded; the item fields above are unset).
	cached *chainEntry
}

// seedAt is a channel's value at a checkpoint.
type seedAt struct{ id, channel string }

// historyScan reads a namespace backwards from the target, a page at a
// time, as far as the walk needs.
type historyScan struct {
	s      *Store
	ns, pk string
	target string // "" until the latest is found, when none was asked for
	hi     string // the Query's upper bound: the target's key, "" for the latest
	in     *dynamodb.QueryInput
	// bounded says the Query stops above the chain cache's part (its :lo),
	// and reads on below only when the chain goes past it uncached.
	bounded bool
	epoch   uint64 // the chain cache's, when the scan started
	nodes   map[string]*histNode
	low     string // the smallest sort key read so far ("" before any)
	done    bool   // the Query has no more pages
	// pending are the writes read since the last checkpoint item, which
	// belong to the next checkpoint the scan meets (if of their id).
	pending   []item
	pendingID string
	// absent are candidate seeds whose read found no value.
	absent map[seedAt]bool
	// holding remembers holds by channel and version: a version's value
	// is where the version came from, whichever checkpoint asks.
	holding map[[2]string]bool
	seedExp map[seedAt]int64 // the expiries of the seeds read

}

// page reads the next page of the Query.
func (h *historyScan) page(ctx context.Context) error {
	out, err := h.s.table.QueryPage(ctx, h.in)
	if err != nil {
		return err
	}
	var n int
	for _, it := range out.Items {
		n += awsx.ItemSize(it)
	}
	if err := saver.Take(ctx, int64(n)); err != nil {
		return err
	}
	for _, it := range out.Items {
		h.add(it)
	}
	if len(out.LastEvaluatedKey) == 0 {
		h.done = true
	} else {
		h.in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return nil
}

// add takes the next item in descending key order.
func (h *historyScan) add(it item) {
	h.low = getS(it, attrSK)
	if h.s.expired(getN(it, attrExpiresAt)) {
		return
	}
	id := getS(it, attrID)
	switch getS(it, attrKind) {
	case itemWrite:
		if id != h.pendingID {
			h.pendingID, h.pending = id, nil
		}
		h.pending = append(h.pending, it)
	case itemCheckpoint:
		n := &histNode{key: getS(it, attrSK), id: id, parent: getS(it, attrParent), versions: map[string]string{},
			exp: getN(it, attrExpiresAt)}
		maps.Copy(n.versions, stringMap(it[attrVersions]))
		if m, ok := it[attrBrought].(*types.AttributeValueMemberM); ok {
			n.brought = make(map[string]bool, len(m.Value))
			for ch, v := range m.Value {
				b, _ := v.(*types.AttributeValueMemberBOOL)
				n.brought[ch] = b != nil && b.Value
			}
		}
		if id == h.pendingID {
			n.writes = h.pending
			for _, w := range n.writes {
				n.exp = earliest(n.exp, getN(w, attrExpiresAt))
			}
		}
		h.pendingID, h.pending = "", nil
		if h.target == "" {
			h.target = id // the latest: the first live checkpoint read
		}
		h.nodes[id] = n
	}
}

// node returns the checkpoint id, reading on while it may lie further
// down; nil once it is known to be absent (never put, or expired). A
// checkpoint that sorts above the target was never in the Query's range
// (only when a target id was given: the latest is the largest of all).
func (h *historyScan) node(ctx context.Context, id string) (n *histNode, outOfOrder bool, err error) {
	key := checkpointKey(h.ns, id)
	for {
		if n := h.nodes[id]; n != nil {
			return n, false, nil
		}
		if h.hi != "" && key > h.hi {
			return nil, true, nil
		}
		if id != h.target {
			if e := h.s.chains.get(chainKey{nsKey{h.pk, h.ns}, id}, h.s.Now().Unix()); e != nil {
				n := &histNode{key: key, id: id, parent: e.parent, versions: e.versions, brought: e.brought, exp: e.exp, cached: e}
				h.nodes[id] = n
				return n, false, nil
			}
		}
		if h.low != "" && key >= h.low {
			return nil, false, nil
		}
		if more, err := h.more(ctx); !more || err != nil {
			return nil, false, err
		}
	}
}

// more reads the next page, going on below the cached part's bound once
// the Query within it is done; false when there is nothing left to read.
func (h *historyScan) more(ctx context.Context) (bool, error) {
	if h.done {
		if !h.bounded {
			return false, nil
		}
		h.bounded, h.done = false, false
		h.in.ExpressionAttributeValues[":lo"] = attrS(nsPrefix(h.ns))
		h.in.ExclusiveStartKey = nil
		if h.low != "" {
			h.in.ExclusiveStartKey = item{attrPK: attrS(h.pk), attrSK: attrS(h.low)}
		}
	}
	return true, h.page(ctx)
}

// channelSet returns the channels of a request as a set.
func channelSet(channels []string) map[string]bool {
	set := make(map[string]bool, len(channels))
	for _, ch := range channels {
		set[ch] = true
	}
	return set
}

// earliest returns the earlier of two expiries, 0 standing for never.
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// readSeeds reads the candidates' values in one BatchGetItem (plus their
// offloaded payloads and patch bases). It returns nil, having marked the
// candidate absent, when one holds no value after all.
func (h *historyScan) readSeeds(ctx context.Context, candidates map[seedAt]string) (map[seedAt]*saver.Typed, error) {
	r := newBlobReader(h.s)
	seeds := make(map[seedAt]*saver.Typed, len(candidates))
	var taken int64
	for at, ver := range candidates {
		if n := h.nodes[at.id]; n != nil && n.cached != nil && n.cached.seeds[at.channel] != nil {
			seeds[at] = n.cached.seeds[at.channel]
			taken += seeds[at].Size()
			continue
		}
		r.want(h.pk, h.ns, at.channel, ver)
	}
	if err := saver.Take(ctx, taken); err != nil {
		return nil, err
	}
	if err := r.read(ctx); err != nil {
		return nil, err
	}
	missing := false
	for at, ver := range candidates {
		if seeds[at] != nil {
			continue
		}
		val, sb, err := r.value(h.pk, h.ns, at.channel, ver)
		if err != nil {
			return nil, err
		}
		if val == nil || sb.blob.Value.Type == saver.EmptyType {
			// Every checkpoint at this version shares the blob.
			h.absent[at], h.holding[[2]string{at.channel, ver}], missing = true, false, true
			continue
		}
		seeds[at] = &saver.Typed{Type: sb.blob.Value.Type, Data: val.data}
		h.seedExp[at] = sb.exp
	}
	if missing {
		return nil, nil
	}
	return seeds, nil
}

// collect decodes the chain's writes, fetching offloaded ones, and walks it.
// The ancestors read from the table go to the chain cache, all their
// writes decoded; those taken from it are charged to ctx's budget as the
// table's reads are.
func (h *historyScan) collect(ctx context.Context, in saver.DeltaRequest, plan *historyPlan, seeds map[seedAt]*saver.Typed) (map[string]*saver.DeltaHistory, error) {
	wanted := channelSet(in.Channels)
	keep := h.s.chains != nil
	var l loads
	var taken int64
	parts := make([]*partial, len(plan.chain))
	for i, n := range plan.chain {
		parts[i] = &partial{tup: &saver.Tuple{}}
		if n.cached != nil {
			taken += writesBytes(n.cached.writes, wanted)
			continue
		}
		for _, it := range n.writes {
			// The walk needs the wanted channels' writes and the bundles
			// (any channel's), the chain cache every write.
			if !keep && !isBundle(it) && !wanted[getS(it, attrChannel)] {
				continue
			}
			if err := parts[i].addWrite(it, &l); err != nil {
				return nil, err
			}
		}
	}
	if err := saver.Take(ctx, taken); err != nil {
		return nil, err
	}
	if err := h.s.fetch(ctx, &l); err != nil {
		return nil, err
	}
	var entries []*chainEntry
	for i, n := range plan.chain {
		p := parts[i]
		if n.cached != nil {
			p.tup.Writes = n.cached.writes
			continue
		}
		if err := p.setWrites(); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", n.id, err)
		}
		if keep {
			entries = append(entries, h.entry(n, p.tup.Writes, seeds))
		}
	}
	h.s.chains.put(h.epoch, entries...)
	return walkChain(in, plan, parts, seeds)
}

// walkChain walks the chain, nearest ancestor first, with the writes
// collected and the seeds read. Where the plan cut the chain at MaxBytes,
// the channels still walking at its last ancestor stop there, their
// history below left to another request (saver.DeltaWalk.Stop), unless
// the walk stopped before it.
func walkChain(in saver.DeltaRequest, plan *historyPlan, parts []*partial, seeds map[seedAt]*saver.Typed) (map[string]*saver.DeltaHistory, error) {
	walk := saver.NewDeltaWalk(in.Channels)
	walk.Limit(in.MaxBytes)
	walk.Known(in.Known)
	for i, n := range plan.chain {
		if !walk.Visit(n.id, parts[i].tup.Writes, func(ch string) *saver.Typed { return seeds[seedAt{n.id, ch}] }) {
			return walk.Result()
		}
	}
	if plan.cut {
		walk.Stop(plan.chain[len(plan.chain)-1].id)
	}
	return walk.Result()
}

// entry returns what the chain cache keeps of n, an ancestor of the target,
// read from the table: it has a child, so its writes are whole (see
// chainCache). Where the walk learnt whether the ancestor a version of a
// channel came from holds its value, the entry says so as its own
// attrBrought would, so that the next walk need not go down to that
// ancestor again; the seeds read at n go with it.
func (h *historyScan) entry(n *histNode, writes []saver.Write, seeds map[seedAt]*saver.Typed) *chainEntry {
	e := &chainEntry{key: chainKey{nsKey{h.pk, h.ns}, n.id}, parent: n.parent, versions: n.versions,
		brought: maps.Clone(n.brought), writes: writes, exp: n.exp}
	for ch, ver := range n.versions {
		if _, ok := e.brought[ch]; ok || e.brought == nil {
			continue
		}
		if v, ok := h.holding[[2]string{ch, ver}]; ok {
			e.brought[ch] = v
		}
	}
	for ch := range n.versions {
		if v := seeds[seedAt{n.id, ch}]; v != nil {
			if e.seeds == nil {
				e.seeds = map[string]*saver.Typed{}
			}
			e.seeds[ch] = v
			e.exp = earliest(e.exp, h.seedExp[seedAt{n.id, ch}])
		}
	}
	return e
}

// historyByTuples walks the chain one GetTuple per ancestor: for chains
// whose ids do not grow from parent to child, which LangGraph never makes.
func (s *Store) historyByTuples(ctx context.Context, in saver.DeltaRequest) (map[string]*saver.DeltaHistory, error) {
	walk := saver.NewDeltaWalk(in.Channels)
	walk.Limit(in.MaxBytes)
	walk.Known(in.Known)
	tup, err := s.getTupleOrNil(ctx, in.CheckpointRef)
	for err == nil && tup != nil && tup.ParentID != "" {
		ref := tup.CheckpointRef
		ref.ID = tup.ParentID
		if tup, err = s.getTupleOrNil(ctx, ref); tup == nil || err != nil {
			break
		}
		values := make(map[string]*saver.Typed, len(tup.Values))
		for i := range tup.Values {
			values[tup.Values[i].Channel] = &tup.Values[i].Value
		}
		if !walk.Visit(tup.ID, tup.Writes, func(ch string) *saver.Typed { return values[ch] }) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return walk.Result()
}

// getTupleOrNil is GetTuple with nil for a checkpoint that is not there.
func (s *Store) getTupleOrNil(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
	tup, err := s.GetTuple(ctx, ref)
	if saver.ErrorCode(err) == saver.ENOTFOUND {
		return nil, nil
	}
	return tup, err
}
