package dynamo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// Patched blobs (see delta.go for the patches). A put that brings a new
// version of a channel whose previous value the store remembers (recent.go)
// may store the new value as a patch on it:
//
//	blob        chain = the versions the patch applies on, in order: the
//	            whole value first, the patch's base last; patch holds the
//	            patch, with the whole value's type, in place of value (so
//	            that code that does not know patches fails on one rather
//	            than return it as a value); hash = contentHash of the whole
//	            value, checked after the patch is applied
//	checkpoint  chains = {channel: chain} for each channel whose value is a
//	            patch, so that a read fetches every blob it needs with the
//	            values in one BatchGetItem; a read that meets a chain the
//	            checkpoint did not list fetches it in one more
//
// A patch needs its chain for as long as it lives, so it takes its base's
// expiry, which every blob of the chain has (or a later one), and is
// written only while that outlives the checkpoint; past that the value
// goes whole with an expiry of its own. A patch is never extended: a put or
// SetExpiry that would extend one writes its whole value in its place, with
// the later expiry (wholeItem), and the lifetimes entry of a patch says it
// is one, so that a put reads it before. Prune keeps the chains of the
// values it keeps; the other operations move whole threads or checkpoints
// and their writes.
//
// A put writes a patch on the condition, on the namespace's lifetimes item,
// that the channel's entry still names the patch's base, with the expiry
// and the content hash the store remembers: the entry is set in the
// transaction that writes its blob, so the base is stored, lives long
// enough, and holds the bytes the patch was made from (a version string
// used again after a delete holds other bytes). Deleting a thread or
// pruning removes lifetimes items before blobs. When the condition fails
// (another process put the channel since, or the item is gone), the put
// writes the whole value.
const (
	attrChain  = "chain"
	attrChains = "chains"
	attrPatch  = "patch"
	attrHash   = "hash"

	// Values smaller than this are stored whole: a patch saves little.
	minPatchedValue = 4 << 10
	// maxChain bounds the blobs a read resolves for one value.
	maxChain = 16
	// maxPatch bounds a patch, so that it never needs offloading.
	maxPatch = 64 << 10

	// DefaultRecentBytes is the default budget of the remembered values.
	DefaultRecentBytes = 64 << 20
)

// patchedBlob is a blob a put brings as a patch on base.
type patchedBlob struct {
	exp      int64 // its base's expiry, which it takes (0: never)
	base     string
	baseHash string
	chain    []string // base's chain and base
	patched  int      // bytes of the patches along chain, this one's included
}

// patchItem returns the item of b, whose contentHash is hash (hashFor), as a
// patch on the channel's remembered value, or nil when it is not worth one:
// no remembered value of another version and the same type, a small value
// (no hash), a long chain, or a patch over a quarter of the value (or making
// a read fetch more than twice it).
func (s *Store) patchItem(ref saver.CheckpointRef, pk string, b saver.Blob, hash string, cpExp int64) (item, *patchedBlob) {
	if s.recent == nil || hash == "" {
		return nil, nil
	}
	r, ok := s.recent.get(recentKey{pk, ref.NS, b.Channel})
	if !ok || r.version == b.Version || r.typ != b.Value.Type || len(r.chain) >= maxChain || !lasts(r.exp, cpExp) || len(r.data) < minPatchedValue {
		return nil, nil
	}
	limit := min(len(b.Value.Data)/4, maxPatch, len(b.Value.Data)-r.patched)
	if limit <= 0 {
		return nil, nil
	}
	p, ok := diff(r.data, b.Value.Data, limit)
	if !ok {
		return nil, nil
	}
	chain := append(r.chain[:len(r.chain):len(r.chain)], r.version)
	it := inlineBlobItem(ref, saver.Blob{Channel: b.Channel, Version: b.Version, Value: saver.Typed{Type: b.Value.Type, Data: p}}, r.exp)
	it[attrPatch] = it[attrValue]
	delete(it, attrValue)
	it[attrChain] = stringList(chain)
	it[attrHash] = attrS(hash)
	return it, &patchedBlob{exp: r.exp, base: r.version, baseHash: r.hash, chain: chain, patched: r.patched + len(p)}
}

// chainsHint returns the chains of the checkpoint's patched values that the
// store knows of: those the put brings, and those of the values it
// references that it remembers.
func (s *Store) chainsHint(pk string, in *saver.PutCheckpoint, brought []saver.Blob, patched []*patchedBlob) types.AttributeValue {
	hint := item{}
	for i, d := range patched {
		if d != nil {
			hint[brought[i].Channel] = stringList(d.chain)
		}
	}
	if s.recent != nil {
		for ch, v := range in.ChannelVersions {
			if _, ok := hint[ch]; ok {
				continue
			}
			if r, ok := s.recent.get(recentKey{pk, in.NS, ch}); ok && r.version == v && len(r.chain) > 0 {
				hint[ch] = stringList(r.chain)
			}
		}
	}
	if len(hint) == 0 {
		return nil
	}
	return &types.AttributeValueMemberM{Value: hint}
}

// remember records the values a put brought, once it succeeded.
func (s *Store) remember(pk string, in *saver.PutCheckpoint, p *putPlan) {
	if s.recent == nil {
		return
	}
	for i, b := range in.Blobs {
		k := recentKey{pk, in.NS, b.Channel}
		if p.dropped[i] {
			s.recent.drop(k) // stored by another put, with its own expiry
			continue
		}
		// A copy: the caller may reuse its buffer, and a remembered value
		// that changed would make wrong patches.
		v := &recentValue{key: k, version: b.Version, typ: b.Value.Type, data: bytes.Clone(b.Value.Data), exp: p.blobExp,
			hash: p.brought[i].hash, vouched: true}
		if d := p.patched[i]; d != nil {
			v.chain, v.patched, v.exp = d.chain, d.patched, d.exp
		}
		s.recent.put(v)
	}
}

// unpatch turns the plan's patches back into whole values: their condition
// failed.
func (p *putPlan) unpatch(ctx context.Context, ref saver.CheckpointRef, blobs []saver.Blob) error {
	for i, d := range p.patched {
		if d == nil || p.dropped[i] {
			continue
		}
		it, err := p.s.blobItem(ctx, ref, blobs[i], p.blobExp)
		if err != nil {
			return fmt.Errorf("blob %s: %w", blobs[i].Channel, err)
		}
		p.blobs[i] = awsx.WriteOp{Item: it, Cond: absentOrExpired(p.now)}
		p.brought[i].ref, p.brought[i].patched = valueRef(it), false
		p.patched[i] = nil
		// The checkpoint no longer needs that chain read.
		if hint, ok := p.cp.Item[attrChains].(*types.AttributeValueMemberM); ok {
			delete(hint.Value, blobs[i].Channel)
			if len(hint.Value) == 0 {
				delete(p.cp.Item, attrChains)
			}
		}
	}
	return nil
}

// patchConds returns the conditions of the plan's patches on the lifetimes
// item: each channel's entry names the patch's base and never expires.
func (p *putPlan) patchConds(c *awsx.Expr) []string {
	var conds []string
	for i, d := range p.patched {
		if d == nil || p.dropped[i] {
			continue
		}
		ch := p.brought[i].channel
		conds = append(conds, "("+c.Path(entryPrefix+ch, entryVersion)+" = "+c.Value(attrS(d.base))+
			" AND "+c.Path(entryPrefix+ch, entryExpiresAt)+" = "+c.Value(attrN(d.exp))+
			" AND "+c.Path(entryPrefix+ch, entryHash)+" = "+c.Value(attrS(d.baseHash))+")")
	}
	return conds
}

// wholeItem returns the item of a blob of ref's namespace with its whole
// value, expiring at exp: what a patch becomes to be extended. It reads the
// blob and its chain (one BatchGetItem).
func (s *Store) wholeItem(ctx context.Context, ref saver.CheckpointRef, channel, version string, exp int64) (item, error) {
	pk := partitionKey(ref.Tenant, ref.ThreadID)
	r := newBlobReader(s)
	r.want(pk, ref.NS, channel, version)
	if err := r.read(ctx); err != nil {
		return nil, err
	}
	val, sb, err := r.value(pk, ref.NS, channel, version)
	if err != nil {
		return nil, err
	}
	if val == nil {
		return nil, fmt.Errorf("blob %s@%s: gone while being extended", channel, version)
	}
	return s.blobItem(ctx, ref, saver.Blob{Channel: channel, Version: version, Value: saver.Typed{Type: sb.blob.Value.Type, Data: val.data}}, exp)
}

// contentHash identifies a value's bytes: 12 bytes of SHA-256, base64.
func contentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// hashFor returns the content hash of a blob that a patch may later take for
// its base, "" for one that cannot be (patches off, or a small value).
func (s *Store) hashFor(b saver.Blob) string {
	if s.recent == nil || len(b.Value.Data) < minPatchedValue {
		return ""
	}
	return contentHash(b.Value.Data)
}

// chainOf returns a blob item's chain; nil for a whole value.
func chainOf(it item) []string { return getStrings(it, attrChain) }

func stringList(ss []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(ss))
	for i, s := range ss {
		l[i] = attrS(s)
	}
	return &types.AttributeValueMemberL{Value: l}
}

func getStrings(it item, name string) []string {
	l, ok := it[name].(*types.AttributeValueMemberL)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(l.Value))
	for _, v := range l.Value {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			out = append(out, s.Value)
		}
	}
	return out
}
