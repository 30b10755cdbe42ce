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

// attrBrought is a checkpoint's record of the blobs its put brought: channel
// -> whether the value is stored (false: an empty blob, which a
// DeltaChannel's version gets at every step that is not a snapshot).
// Checkpoint items put before it existed lack it.
const attrBrought = "brought"

// broughtAttr returns the attrBrought of a put: its blobs at the versions
// the checkpoint has.
func broughtAttr(in *saver.PutCheckpoint) types.AttributeValue {
	m := make(item, len(in.Blobs))
	for _, b := range in.Blobs {
		if in.ChannelVersions[b.Channel] == b.Version {
			m[b.Channel] = &types.AttributeValueMemberBOOL{Value: b.Value.Type != saver.EmptyType}
		}
	}
	return &types.AttributeValueMemberM{Value: m}
}

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
		return saver.NewDeltaWalk(nil).Result(), nil
	}
	h := &historyScan{s: s, ns: in.NS, pk: partitionKey(in.Tenant, in.ThreadID), target: in.ID,
		nodes: map[string]*histNode{}, absent: map[seedAt]bool{}, holding: map[[2]string]bool{}}
	h.in = &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: item{":pk": attrS(h.pk), ":sk": attrS(nsPrefix(in.NS))},
		ScanIndexForward:          ptr(false),
	}
	if in.ID != "" {
		h.hi = checkpointKey(in.NS, in.ID)
		h.in.KeyConditionExpression = ptr("PK = :pk AND SK BETWEEN :lo AND :hi")
		h.in.ExpressionAttributeValues = item{":pk": attrS(h.pk), ":lo": attrS(nsPrefix(in.NS)), ":hi": attrS(h.hi)}
	}
	project(&h.in.ProjectionExpression, &h.in.ExpressionAttributeNames, historyAttrs)
	for {
		plan, err := h.plan(ctx, in.Channels, in.MaxBytes)
		if err != nil {
			return nil, err
		}
		if plan.outOfOrder {
			return s.historyByTuples(ctx, in)
		}
		if plan.chain == nil {
			return saver.NewDeltaWalk(in.Channels).Result(), nil // no target
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

// histNode is a checkpoint as the history scan read it, with its writes.
type histNode struct {
	key      string
	id       string
	parent   string
	versions map[string]string
	brought  map[string]bool // nil: the item predates attrBrought
	writes   []item
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
	nodes  map[string]*histNode
	low    string // the smallest sort key read so far ("" before any)
	done   bool   // the Query has no more pages
	// pending are the writes read since the last checkpoint item, which
	// belong to the next checkpoint the scan meets (if of their id).
	pending   []item
	pendingID string
	// absent are candidate seeds whose read found no value.
	absent map[seedAt]bool
	// holding remembers holds by channel and version: a version's value
	// is where the version came from, whichever checkpoint asks.
	holding map[[2]string]bool
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
		n := &histNode{key: getS(it, attrSK), id: id, parent: getS(it, attrParent), versions: map[string]string{}}
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
		if h.done || (h.low != "" && key >= h.low) {
			return nil, false, nil
		}
		if err := h.page(ctx); err != nil {
			return nil, false, err
		}
	}
}

// historyPlan is where each channel's walk is expected to end.
type historyPlan struct {
	chain      []*histNode // the target's ancestors, nearest first, as far as any walk goes
	candidates map[seedAt]string
	outOfOrder bool
	// cut says the chain stops at the request's MaxBytes, with walks
	// that go on past it.
	cut bool
}

// plan follows the chain from the target's parent and finds, per channel,
// the nearest ancestor that holds a value of it, reading pages as needed.
func (h *historyScan) plan(ctx context.Context, channels []string, maxBytes int64) (*historyPlan, error) {
	for h.target == "" && !h.done {
		if err := h.page(ctx); err != nil {
			return nil, err
		}
	}
	p := &historyPlan{candidates: map[seedAt]string{}}
	if h.target == "" {
		return p, nil
	}
	t, outOfOrder, err := h.node(ctx, h.target)
	if err != nil || outOfOrder || t == nil {
		p.outOfOrder = outOfOrder
		return p, err
	}
	p.chain = []*histNode{}
	remaining := map[string]bool{}
	for _, ch := range channels {
		remaining[ch] = true
	}
	seen := map[string]bool{t.id: true}
	var bytes int64
	for cur := t; cur.parent != "" && len(remaining) > 0; {
		if maxBytes > 0 && bytes >= maxBytes {
			p.cut = true
			break
		}
		a, outOfOrder, err := h.node(ctx, cur.parent)
		if err != nil || outOfOrder {
			p.outOfOrder = outOfOrder
			return p, err
		}
		if a == nil || seen[a.id] {
			break
		}
		seen[a.id] = true
		p.chain = append(p.chain, a)
		for _, it := range a.writes {
			if remaining[getS(it, attrChannel)] || isBundle(it) {
				bytes += int64(awsx.ItemSize(it))
			}
		}
		for ch := range remaining {
			holds, outOfOrder, err := h.holds(ctx, a, ch)
			if err != nil || outOfOrder {
				p.outOfOrder = outOfOrder
				return p, err
			}
			if holds {
				p.candidates[seedAt{a.id, ch}] = a.versions[ch]
				delete(remaining, ch)
			}
		}
		cur = a
	}
	return p, nil
}

// holds reports whether checkpoint a may hold a value of channel: its
// version of the channel was brought, with a value, by a (or by the
// ancestor its version comes from, a fork's or an unchanged channel's), or
// it is not known where the version came from. Reads confirm it.
func (h *historyScan) holds(ctx context.Context, a *histNode, channel string) (bool, bool, error) {
	ver, ok := a.versions[channel]
	if !ok || h.absent[seedAt{a.id, channel}] {
		return false, false, nil
	}
	if v, ok := h.holding[[2]string{channel, ver}]; ok {
		return v, false, nil
	}
	holds, outOfOrder, err := h.origin(ctx, a, channel, ver)
	if err == nil && !outOfOrder {
		h.holding[[2]string{channel, ver}] = holds
	}
	return holds, outOfOrder, err
}

// origin goes down a's chain to the checkpoint that brought its version
// of channel and says whether that one brought a value; true when it cannot
// tell (an item older than attrBrought, or the chain cut short).
func (h *historyScan) origin(ctx context.Context, a *histNode, channel, ver string) (bool, bool, error) {
	seen := map[string]bool{}
	for n := a; ; {
		if b, ok := n.brought[channel]; ok {
			return b, false, nil
		}
		seen[n.id] = true
		if n.parent == "" || seen[n.parent] {
			return true, false, nil
		}
		p, outOfOrder, err := h.node(ctx, n.parent)
		if err != nil || outOfOrder {
			return false, outOfOrder, err
		}
		if p == nil || p.versions[channel] != ver {
			return true, false, nil
		}
		n = p
	}
}

// readSeeds reads the candidates' values in one BatchGetItem (plus their
// offloaded payloads and patch bases). It returns nil, having marked the
// candidate absent, when one holds no value after all.
func (h *historyScan) readSeeds(ctx context.Context, candidates map[seedAt]string) (map[seedAt]*saver.Typed, error) {
	r := newBlobReader(h.s)
	for at, ver := range candidates {
		r.want(h.pk, h.ns, at.channel, ver)
	}
	if err := r.read(ctx); err != nil {
		return nil, err
	}
	seeds := make(map[seedAt]*saver.Typed, len(candidates))
	missing := false
	for at, ver := range candidates {
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
	}
	if missing {
		return nil, nil
	}
	return seeds, nil
}

// collect decodes the chain's writes, fetching offloaded ones, and walks it.
func (h *historyScan) collect(ctx context.Context, in saver.DeltaRequest, plan *historyPlan, seeds map[seedAt]*saver.Typed) (map[string]*saver.DeltaHistory, error) {
	channels, chain := in.Channels, plan.chain
	wanted := make(map[string]bool, len(channels))
	for _, ch := range channels {
		wanted[ch] = true
	}
	var l loads
	parts := make([]*partial, len(chain))
	for i, n := range chain {
		p := &partial{tup: &saver.Tuple{}}
		for _, it := range n.writes {
			if isBundle(it) {
				v := &saver.Typed{}
				if err := l.payload(it[attrValue], v); err != nil {
					return nil, fmt.Errorf("bundle of task %s: %w", getS(it, attrTaskID), err)
				}
				p.bundles = append(p.bundles, bundleValue{sk: getS(it, attrSK), value: v})
				continue
			}
			if !wanted[getS(it, attrChannel)] {
				continue
			}
			w, err := decodeWrite(it, &l)
			if err != nil {
				return nil, err
			}
			p.writes = append(p.writes, w)
		}
		parts[i] = p
	}
	if err := h.s.fetch(ctx, &l); err != nil {
		return nil, err
	}
	walk := saver.NewDeltaWalk(channels)
	walk.Limit(in.MaxBytes)
	stopped := false
	for i, n := range chain {
		p := parts[i]
		for _, w := range p.writes {
			p.tup.Writes = append(p.tup.Writes, *w)
		}
		if err := p.unbundle(); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", n.id, err)
		}
		saver.SortWrites(p.tup.Writes)
		if !walk.Visit(n.id, p.tup.Writes, func(ch string) *saver.Typed { return seeds[seedAt{n.id, ch}] }) {
			stopped = true
			break
		}
	}
	if plan.cut && !stopped {
		walk.Stop(chain[len(chain)-1].id)
	}
	return walk.Result(), nil
}

// historyByTuples walks the chain one GetTuple per ancestor: for chains
// whose ids do not grow from parent to child, which LangGraph never makes.
func (s *Store) historyByTuples(ctx context.Context, in saver.DeltaRequest) (map[string]*saver.DeltaHistory, error) {
	walk := saver.NewDeltaWalk(in.Channels)
	walk.Limit(in.MaxBytes)
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
	return walk.Result(), nil
}

// getTupleOrNil is GetTuple with nil for a checkpoint that is not there.
func (s *Store) getTupleOrNil(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
	tup, err := s.GetTuple(ctx, ref)
	if saver.ErrorCode(err) == saver.ENOTFOUND {
		return nil, nil
	}
	return tup, err
}
