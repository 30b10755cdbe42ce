package dynamo

import (
	"bytes"
	"cmp"
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
		if ref.ID == "" {
			return nil, saver.Errorf(saver.ENOTFOUND, "Thread %s has no checkpoint in namespace %q.", ref.ThreadID, ref.NS)
		}
		return nil, saver.Errorf(saver.ENOTFOUND, "Checkpoint %s not found.", ref.ID)
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
		if isBundle(it) {
			v := &saver.Typed{}
			if err := p.loads.payload(it[attrValue], v); err != nil {
				return nil, fmt.Errorf("bundle of task %s: %w", getS(it, attrTaskID), err)
			}
			p.bundles = append(p.bundles, bundleValue{sk: getS(it, attrSK), value: v})
			continue
		}
		w, err := decodeWrite(it, &p.loads)
		if err != nil {
			return nil, err
		}
		p.writes = append(p.writes, w)
	}
	return p, nil
}

// complete resolves the partials' channel values, from memory when a
// checkpoint's known entries match the values the store remembers
// (known.go) and with BatchGetItem otherwise, fetches their offloaded
// payloads and returns the finished tuples in order. With remember, the
// store keeps the values it read, to patch on and to answer the next read
// (a latest read: the next put of the thread is likely to change them).
func (s *Store) complete(ctx context.Context, tenant string, ps []*partial, remember bool) ([]*saver.Tuple, error) {
	r := newBlobReader(s)
	mem := make([]map[string]saver.Typed, len(ps))
	for i, p := range ps {
		pk := partitionKey(tenant, p.tup.ThreadID)
		for ch, v := range p.tup.ChannelVersions {
			k, ok := p.known[ch]
			if val, ok := s.fromMemory(pk, p.tup.NS, ch, v, k, ok); ok {
				if mem[i] == nil {
					mem[i] = make(map[string]saver.Typed, len(p.tup.ChannelVersions))
				}
				mem[i][ch] = val
				continue
			}
			r.want(pk, p.tup.NS, ch, v)
			for _, c := range p.chains[ch] {
				r.want(pk, p.tup.NS, ch, c)
			}
		}
		r.pending.refs = append(r.pending.refs, p.loads.refs...)
		r.pending.dsts = append(r.pending.dsts, p.loads.dsts...)
	}
	if err := r.read(ctx); err != nil {
		return nil, err
	}
	out := make([]*saver.Tuple, len(ps))
	for i, p := range ps {
		tup := p.tup
		pk := partitionKey(tenant, tup.ThreadID)
		for ch, v := range tup.ChannelVersions {
			value, ok := mem[i][ch]
			if !ok {
				val, sb, err := r.value(pk, tup.NS, ch, v)
				if err != nil {
					return nil, fmt.Errorf("checkpoint %s: %w", tup.ID, err)
				}
				if val == nil {
					continue
				}
				value = saver.Typed{Type: sb.blob.Value.Type, Data: val.data}
				if remember {
					s.rememberRead(recentKey{pk, tup.NS, ch}, v, value, val, sb.exp)
				}
			}
			if value.Type != saver.EmptyType {
				tup.Values = append(tup.Values, saver.Blob{Channel: ch, Version: v, Value: value})
			}
		}
		slices.SortFunc(tup.Values, func(a, b saver.Blob) int { return strings.Compare(a.Channel, b.Channel) })
		for _, w := range p.writes {
			tup.Writes = append(tup.Writes, *w)
		}
		if err := p.unbundle(); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", tup.ID, err)
		}
		sortWrites(tup.Writes)
		out[i] = tup
	}
	return out, nil
}

// rememberRead keeps a value a latest read returned. A copy: the tuple's
// value goes to the caller.
func (s *Store) rememberRead(k recentKey, version string, v saver.Typed, val *resolved, exp int64) {
	if s.recent == nil {
		return
	}
	hash := val.hash
	if hash == "" {
		hash = contentHash(val.data)
	}
	s.recent.put(&recentValue{key: k, version: version, typ: v.Type, data: bytes.Clone(val.data),
		chain: val.chain, patched: val.patched, exp: exp, hash: hash})
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

// sortWrites orders writes as the contract returns them: by task path, task
// id and idx.
func sortWrites(ws []saver.Write) {
	slices.SortFunc(ws, func(a, b saver.Write) int {
		return cmp.Or(
			strings.Compare(a.TaskPath, b.TaskPath),
			strings.Compare(a.TaskID, b.TaskID),
			cmp.Compare(a.Idx, b.Idx))
	})
}
