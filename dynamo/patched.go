package dynamo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"time"

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

// patchPart is the patches of a put, a part of its namespace item: each
// patch it brings is written on the condition that the channel's entry
// still names its base, with the expiry and content hash the store
// remembers; when that fails, the put brings the whole value instead. It
// records the chains of the checkpoint's patched values on the checkpoint
// item, so that a read fetches all the blobs it needs at once.
type patchPart struct {
	s       *Store
	ref     saver.CheckpointRef
	blobs   []*newBlob
	blobExp int64
	now     time.Time
	// remembered are the chains of the values the checkpoint references
	// that the store remembers as patches.
	remembered item
}

// newPatchPart returns the patches of a put among the blobs it brings.
func (s *Store) newPatchPart(in *saver.PutCheckpoint, pk string, blobs []*newBlob, blobExp int64, now time.Time) *patchPart {
	p := &patchPart{s: s, ref: in.CheckpointRef, blobs: blobs, blobExp: blobExp, now: now, remembered: item{}}
	if s.recent == nil {
		return p
	}
	patched := map[string]bool{}
	for _, b := range blobs {
		patched[b.blob.Channel] = patched[b.blob.Channel] || b.patch != nil
	}
	for ch, v := range in.ChannelVersions {
		if patched[ch] {
			continue
		}
		if r, ok := s.recent.get(recentKey{pk, in.NS, ch}); ok && r.version == v && len(r.chain) > 0 {
			p.remembered[ch] = stringList(r.chain)
		}
	}
	return p
}

// update returns the conditions of the put's patches (each channel's entry
// names the patch's base, with its expiry and content hash), and sets the
// checkpoint's chains hint: the chains of the patches it brings, and of the
// values it references that the store remembers.
func (p *patchPart) update(c, _ *awsx.Expr, cp item) (conds, sets []string) {
	for _, b := range p.blobs {
		if d := b.patch; d != nil && !b.dropped {
			ch := b.blob.Channel
			conds = append(conds, "("+c.Path(entryPrefix+ch, entryVersion)+" = "+c.Value(attrS(d.base))+
				" AND "+c.Path(entryPrefix+ch, entryExpiresAt)+" = "+c.Value(attrN(d.exp))+
				" AND "+c.Path(entryPrefix+ch, entryHash)+" = "+c.Value(attrS(d.baseHash))+")")
		}
	}
	hint := maps.Clone(p.remembered)
	for _, b := range p.blobs {
		if b.patch != nil {
			hint[b.blob.Channel] = stringList(b.patch.chain)
		}
	}
	if len(hint) == 0 {
		delete(cp, attrChains)
	} else {
		cp[attrChains] = &types.AttributeValueMemberM{Value: hint}
	}
	return conds, nil
}

// refuted turns the put's patches into whole values: the condition failed,
// whichever part it was for (another process put the channel since, or the
// item is gone).
func (p *patchPart) refuted(ctx context.Context, _ item) error {
	for _, b := range p.blobs {
		if b.patch == nil || b.dropped {
			continue
		}
		it, err := p.s.blobItem(ctx, p.ref, b.blob, p.blobExp)
		if err != nil {
			return fmt.Errorf("blob %s: %w", b.blob.Channel, err)
		}
		b.op = awsx.WriteOp{Item: it, Cond: absentOrExpired(p.now)}
		b.entry.ref, b.entry.patched = valueRef(it), false
		b.patch, b.exp = nil, p.blobExp
	}
	return nil
}

// remember records the values a put brought, once it succeeded.
func (s *Store) remember(pk string, in *saver.PutCheckpoint, p *putPlan) {
	if s.recent == nil {
		return
	}
	for _, b := range p.blobs {
		k := recentKey{pk, in.NS, b.blob.Channel}
		if b.dropped {
			s.recent.drop(k) // stored by another put, with its own expiry
			continue
		}
		// A copy: the caller may reuse its buffer, and a remembered value
		// that changed would make wrong patches.
		v := &recentValue{key: k, version: b.blob.Version, typ: b.blob.Value.Type, data: bytes.Clone(b.blob.Value.Data), exp: p.blobExp,
			hash: b.entry.hash, vouched: true}
		if d := b.patch; d != nil {
			v.chain, v.patched, v.exp = d.chain, d.patched, d.exp
		}
		s.recent.put(v)
	}
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
