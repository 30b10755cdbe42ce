package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver"
)

// GetTuple reads the checkpoint with its pending writes in one Query: writes
// sort right after their checkpoint, so a checkpoint's key prefix selects
// both. For the latest checkpoint the Query runs backwards from the end of
// the namespace and stops at the first checkpoint, whose writes it has just
// passed. Channel values then come in one BatchGetItem per 100 blobs.
func (s *Store) GetTuple(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
	pt, err := s.getTuple(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("dynamo: get checkpoint %q: %w", ref.ID, err)
	}
	if pt == nil {
		return nil, saver.CheckpointNotFound(ref)
	}
	tuples, err := s.complete(ctx, ref.Tenant, []*partial{pt}, ref.ID == "")
	if err != nil {
		return nil, fmt.Errorf("dynamo: get checkpoint %q: %w", ref.ID, err)
	}
	return tuples[0], nil
}

func (s *Store) getTuple(ctx context.Context, ref saver.CheckpointRef) (*partial, error) {
	pk := partitionKey(ref.Tenant, ref.ThreadID)
	var (
		w   = walker{tenant: ref.Tenant, store: s}
		out *partial
		err error
	)
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: item{":pk": attrS(pk), ":sk": attrS(nsPrefix(ref.NS))},
		ScanIndexForward:          ptr(false),
		Limit:                     ptr(s.FirstPage),
	}
	if ref.ID != "" {
		in.ExpressionAttributeValues[":sk"] = attrS(checkpointKey(ref.NS, ref.ID))
		in.Limit = nil
	}
	qerr := s.table.Query(ctx, in, func(items []item) bool {
		for _, it := range items {
			if out, err = w.add(it); err != nil || out != nil {
				return false
			}
		}
		// Not found in the first page: the newest checkpoints carry many
		// writes, or writes arrived ahead of their checkpoint. Read on in
		// larger pages.
		in.Limit = nil
		return true
	})
	if qerr != nil {
		return nil, qerr
	}
	return out, err
}

// partial is a checkpoint as read, before its values are resolved and its
// offloaded payloads fetched.
type partial struct {
	tup     *saver.Tuple
	writes  []*saver.Write
	bundles []bundleValue         // (see bundle.go), unpacked by complete
	chains  map[string][]string   // the checkpoint's chains hint (see patched.go)
	known   map[string]knownValue // what its put knew of its values (known.go)
	loads   loads
}

// walker turns one namespace's items, in descending key order, into
// checkpoints with their writes. Writes sort right after their checkpoint,
// so walking backwards a checkpoint's writes come just before it; writes
// followed by no checkpoint of their id belong to a checkpoint not put yet
// and are dropped.
type walker struct {
	tenant string
	store  *Store
	id     string // checkpoint id of the writes held
	writes []item
}

// add takes the next item and returns a checkpoint when it completes one.
func (w *walker) add(it item) (*partial, error) {
	if w.store.expired(getN(it, attrExpiresAt)) {
		return nil, nil
	}
	id := getS(it, attrID)
	switch getS(it, attrKind) {
	case itemWrite:
		if id != w.id {
			w.id, w.writes = id, w.writes[:0]
		}
		w.writes = append(w.writes, it)
	case itemCheckpoint:
		var writes []item
		if id == w.id {
			writes = w.writes
		}
		p, err := newPartial(w.tenant, it, writes)
		w.id, w.writes = "", nil
		return p, err
	}
	return nil, nil
}

// newPartial decodes a checkpoint item and its write items.
func newPartial(tenant string, cp item, writes []item) (*partial, error) {
	p := &partial{}
	tup, err := decodeCheckpoint(tenant, cp, &p.loads)
	if err != nil {
		return nil, err
	}
	p.tup, p.chains, p.known = tup, chainsOf(cp), knownOf(cp)
	for _, it := range writes {
		if err := p.addWrite(it, &p.loads); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addWrite decodes a write item of the checkpoint, its offloaded payload
// deferred in l: a bundle is kept whole, for unbundle to unpack once the
// payloads are fetched.
func (p *partial) addWrite(it item, l *loads) error {
	if isBundle(it) {
		v := &saver.Typed{}
		if err := l.payload(it[attrValue], v); err != nil {
			return fmt.Errorf("bundle of task %s: %w", getS(it, attrTaskID), err)
		}
		p.bundles = append(p.bundles, bundleValue{sk: getS(it, attrSK), value: v})
		return nil
	}
	w, err := decodeWrite(it, l)
	if err != nil {
		return err
	}
	p.writes = append(p.writes, w)
	return nil
}

// complete resolves the partials' channel values, from memory when a
// checkpoint's known entries match the values the store remembers
// (known.go) and with BatchGetItem otherwise, fetches their offloaded
// payloads and returns the finished tuples in order. With remember, the
// store keeps the values it read (patches.rememberRead: a latest read, whose
// thread's next put is likely to change them).
func (s *Store) complete(ctx context.Context, tenant string, parts []*partial, remember bool) ([]*saver.Tuple, error) {
	r := newBlobReader(s)
	ps := patches{s}
	mem := make([]map[string]saver.Typed, len(parts))
	for i, p := range parts {
		mem[i] = p.want(r, ps, partitionKey(tenant, p.tup.ThreadID))
	}
	if err := r.read(ctx); err != nil {
		return nil, err
	}
	out := make([]*saver.Tuple, len(parts))
	for i, p := range parts {
		if err := p.finish(r, ps, partitionKey(tenant, p.tup.ThreadID), mem[i], remember); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", p.tup.ID, err)
		}
		out[i] = p.tup
	}
	return out, nil
}

// want returns the checkpoint's values that the store remembers as its
// known entries say (known.go), and adds the others to r's read, with the
// chains the checkpoint lists for them and its offloaded payloads.
func (p *partial) want(r *blobReader, ps patches, pk string) map[string]saver.Typed {
	var mem map[string]saver.Typed
	for ch, v := range p.tup.ChannelVersions {
		k, ok := p.known[ch]
		if val, ok := ps.fromMemory(pk, p.tup.NS, ch, v, k, ok); ok {
			if mem == nil {
				mem = make(map[string]saver.Typed, len(p.tup.ChannelVersions))
			}
			mem[ch] = val
			continue
		}
		r.want(pk, p.tup.NS, ch, v)
		for _, c := range p.chains[ch] {
			r.want(pk, p.tup.NS, ch, c)
		}
	}
	r.pending.refs = append(r.pending.refs, p.loads.refs...)
	r.pending.dsts = append(r.pending.dsts, p.loads.dsts...)
	return mem
}

// finish sets the tuple's values, from mem or as r read them (remembering
// those with remember), and its writes, in the contract's order.
func (p *partial) finish(r *blobReader, ps patches, pk string, mem map[string]saver.Typed, remember bool) error {
	tup := p.tup
	for ch, v := range tup.ChannelVersions {
		value, ok := mem[ch]
		if !ok {
			val, sb, err := r.value(pk, tup.NS, ch, v)
			if err != nil {
				return err
			}
			if val == nil {
				continue
			}
			value = saver.Typed{Type: sb.blob.Value.Type, Data: val.data}
			if remember {
				ps.rememberRead(recentKey{pk, tup.NS, ch}, v, value.Type, val, sb.exp)
			}
		}
		if value.Type != saver.EmptyType {
			tup.Values = append(tup.Values, saver.Blob{Channel: ch, Version: v, Value: value})
		}
	}
	slices.SortFunc(tup.Values, func(a, b saver.Blob) int { return strings.Compare(a.Channel, b.Channel) })
	return p.setWrites()
}

// setWrites sets the tuple's writes, once their payloads are fetched: the
// decoded ones and those of the bundles, in the contract's order.
func (p *partial) setWrites() error {
	for _, w := range p.writes {
		p.tup.Writes = append(p.tup.Writes, *w)
	}
	if err := p.unbundle(); err != nil {
		return err
	}
	saver.SortWrites(p.tup.Writes)
	return nil
}

// unbundle adds the writes of p's bundles to its tuple. A write also stored
// on its own, or in a bundle of a smaller key, is kept once, in that copy:
// the same task and idx stored twice means a replayed task, whose first
// write wins, and those copies came first (items of one write and "b"
// bundles are older versions' writes; a task's later bundles hold only idxs
// the ones before lack, see PutWrites).
func (p *partial) unbundle() error {
	if len(p.bundles) == 0 {
		return nil
	}
	slices.SortFunc(p.bundles, func(a, b bundleValue) int { return strings.Compare(a.sk, b.sk) })
	seen := make(map[writeID]bool, len(p.tup.Writes))
	for _, w := range p.tup.Writes {
		seen[writeID{w.TaskID, w.Idx}] = true
	}
	for _, b := range p.bundles {
		ws, err := unbundle(*b.value)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if id := (writeID{w.TaskID, w.Idx}); !seen[id] {
				seen[id] = true
				p.tup.Writes = append(p.tup.Writes, w)
			}
		}
	}
	return nil
}
