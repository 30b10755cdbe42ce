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

// Patched blobs (see bytepatch.go for the patches). A put that brings a new
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
// the later expiry (whole), and the lifetimes entry of a patch says it
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

// patches is the store's patch cache value: whatever must know that a blob
// may be a patch asks it. It owns
//
//   - the cache (recent.go): per channel, the last value a put of this
//     replica brought, or a latest read returned; puts fill it once they
//     succeeded (patches.remember), and so do latest reads
//     (rememberRead), since the next put of a thread just read is likely
//     to change those values and the next read to want them again;
//   - encoding: a put brings a new version as a patch on the remembered
//     one when worth it (bring, with the put's patch part);
//   - resolution: a read applies a patch on its chain and checks the hash
//     (resolve);
//   - extension: a patch is extended as its whole value (whole);
//   - pruning: a value kept keeps the blobs it patches on (keepBases);
//   - known values (known.go): what a put knew of a checkpoint's values,
//     which the next read takes from the cache.
//
// It is a view of the store (patches{s}: its cache and clock), so that a
// copy of a Store value, which shares the cache, keeps its own clock.
type patches struct{ s *Store }

// RememberValues sets the budget of the patch cache: the bytes of recent
// channel values the store keeps, to store the next versions as patches on
// them and to answer reads of them from memory (known.go); 0 turns both
// off, and every value is stored whole.
func (s *Store) RememberValues(bytes int) {
	if bytes <= 0 {
		s.recent = nil
		return
	}
	s.recent = newRecent(bytes)
}

// on reports whether the store remembers values (and so makes patches).
func (ps patches) on() bool { return ps.s.recent != nil }

// recall returns the remembered values of the channels of a put, by
// channel: one lookup, whose answers the put's parts share; nil when the
// store remembers nothing.
func (ps patches) recall(pk string, in *saver.PutCheckpoint) map[string]*recentValue {
	if !ps.on() {
		return nil
	}
	keys := make([]recentKey, 0, len(in.ChannelVersions)+len(in.Blobs))
	for _, b := range in.Blobs {
		keys = append(keys, recentKey{pk, in.NS, b.Channel})
	}
	for ch := range in.ChannelVersions {
		keys = append(keys, recentKey{pk, in.NS, ch})
	}
	found := ps.s.recent.getAll(keys)
	out := make(map[string]*recentValue, len(found))
	for k, v := range found {
		out[k.channel] = v
	}
	return out
}

// patchedBlob is a blob a put brings as a patch on base.
type patchedBlob struct {
	exp      int64 // its base's expiry, which it takes (0: never)
	base     string
	baseHash string
	chain    []string // base's chain and base
	patched  int      // bytes of the patches along chain, this one's included
}

// bring returns the blobs a put brings, each a patch on the channel's
// remembered value where worth one and whole otherwise, in the put's patch
// part, with what the store remembers of the put's channels.
func (ps patches) bring(ctx context.Context, in *saver.PutCheckpoint, pk string, blobExp int64, now time.Time) (*patchPart, error) {
	mem := ps.recall(pk, in)
	p := &patchPart{s: ps.s, ref: in.CheckpointRef, blobExp: blobExp, now: now, remembered: item{}, mem: mem}
	for _, b := range in.Blobs {
		hash := ps.hashFor(b)
		it, patch := ps.encode(in.CheckpointRef, b, hash, mem[b.Channel], in.ExpiresAt)
		if hash == "" && ps.on() {
			hash = contentHash(b.Value.Data) // for known.go
		}
		if patch == nil {
			var err error
			if it, err = ps.s.blobItem(ctx, in.CheckpointRef, b, blobExp); err != nil {
				return nil, fmt.Errorf("blob %s: %w", b.Channel, err)
			}
		}
		nb := &newBlob{
			blob:  b,
			op:    awsx.WriteOp{Item: it, Cond: absentOrExpired(now)},
			entry: blobRef{key: keyOf(it), channel: b.Channel, version: b.Version, ref: valueRef(it), patched: patch != nil, hash: hash},
			exp:   blobExp,
			patch: patch,
		}
		if patch != nil {
			nb.exp = patch.exp
		}
		p.blobs = append(p.blobs, nb)
	}
	patched := map[string]bool{}
	for _, b := range p.blobs {
		patched[b.blob.Channel] = patched[b.blob.Channel] || b.patch != nil
	}
	for ch, v := range in.ChannelVersions {
		if r := mem[ch]; r != nil && !patched[ch] && r.version == v && len(r.chain) > 0 {
			p.remembered[ch] = stringList(r.chain)
		}
	}
	return p, nil
}

// encode returns the item of b, whose contentHash is hash (hashFor), as a
// patch on the channel's remembered value r, or nil when it is not worth
// one: no remembered value of another version and the same type, a small
// value (no hash), a long chain, or a patch over a quarter of the value (or
// making a read fetch more than twice it).
func (ps patches) encode(ref saver.CheckpointRef, b saver.Blob, hash string, r *recentValue, cpExp int64) (item, *patchedBlob) {
	if !ps.on() || hash == "" || r == nil {
		return nil, nil
	}
	if r.version == b.Version || r.typ != b.Value.Type || len(r.chain) >= maxChain || !lasts(r.exp, cpExp) || len(r.data) < minPatchedValue {
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

// hashFor returns the content hash of a blob that a patch may later take for
// its base, "" for one that cannot be (patches off, or a small value).
func (ps patches) hashFor(b saver.Blob) string {
	if !ps.on() || len(b.Value.Data) < minPatchedValue {
		return ""
	}
	return contentHash(b.Value.Data)
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
	blobs   []*newBlob // every blob the put brings
	blobExp int64
	now     time.Time
	// remembered are the chains of the values the checkpoint references
	// that the store remembers as patches.
	remembered item
	// mem is what the store remembers of the put's channels (recall), for
	// its other parts; nil when it remembers nothing.
	mem map[string]*recentValue
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
	setMap(cp, attrChains, hint)
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
func (ps patches) remember(pk, ns string, blobs []*newBlob) {
	if !ps.on() {
		return
	}
	for _, b := range blobs {
		k := recentKey{pk, ns, b.blob.Channel}
		if b.dropped {
			ps.s.recent.drop(k) // stored by another put, with its own expiry
			continue
		}
		// A copy: the caller may reuse its buffer, and a remembered value
		// that changed would make wrong patches.
		v := &recentValue{key: k, version: b.blob.Version, typ: b.blob.Value.Type, data: bytes.Clone(b.blob.Value.Data), exp: b.exp,
			hash: b.entry.hash, vouched: true}
		if d := b.patch; d != nil {
			v.chain, v.patched = d.chain, d.patched
		}
		ps.s.recent.put(v)
	}
}

// rememberRead keeps a value a latest read returned: the next put of the
// thread patches on it, and the next read takes it from here when the
// checkpoint's known entry matches (known.go). Not vouched: no put of this
// replica brought it, so no lifetimes entry is known to hold its hash. A
// copy: the tuple's value goes to the caller.
func (ps patches) rememberRead(k recentKey, version, typ string, val *resolved, exp int64) {
	if !ps.on() {
		return
	}
	hash := val.hash
	if hash == "" {
		hash = contentHash(val.data)
	}
	ps.s.recent.put(&recentValue{key: k, version: version, typ: typ, data: bytes.Clone(val.data),
		chain: val.chain, patched: val.patched, exp: exp, hash: hash})
}

// whole returns the item that extends the blob old, of channel at version
// in ref's namespace, to exp when it is a patch: its whole value (a patch
// is never extended, as its chain would not be), read with its chain (one
// BatchGetItem). It returns nil for a whole value, which is extended as it
// is.
func (ps patches) whole(ctx context.Context, ref saver.CheckpointRef, channel, version string, old item, exp int64) (item, error) {
	if !isPatch(old) {
		return nil, nil
	}
	pk := partitionKey(ref.Tenant, ref.ThreadID)
	r := newBlobReader(ps.s)
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
	return ps.s.blobItem(ctx, ref, saver.Blob{Channel: channel, Version: version, Value: saver.Typed{Type: sb.blob.Value.Type, Data: val.data}}, exp)
}

// resolve returns the whole value of the blob sb, a patch on base (its
// chain's last version, resolved already): the patch applied, checked
// against the hash of the value it was made from. A patch that does not
// rebuild it is corrupt data, which fails the read rather than return a
// wrong value.
func (ps patches) resolve(channel, version string, sb *storedBlob, base *resolved) (*resolved, error) {
	on := sb.chain[len(sb.chain)-1]
	if base == nil {
		return nil, fmt.Errorf("blob %s@%s: the value it patches, %s, is missing", channel, version, on)
	}
	data, err := patch(base.data, sb.blob.Value.Data)
	if err != nil {
		return nil, fmt.Errorf("blob %s@%s: %w", channel, version, err)
	}
	if h := contentHash(data); h != sb.hash {
		return nil, fmt.Errorf("blob %s@%s: %w: applied on %s it does not rebuild the value it was made from", channel, version, errPatch, on)
	}
	return &resolved{data: data, chain: sb.chain, patched: base.patched + len(sb.blob.Value.Data), hash: sb.hash}, nil
}

// keepBases adds to keep (sort keys) the blobs the kept patches among items
// patch on: pruning keeps a value's chain with it.
func (ps patches) keepBases(items []item, keep map[string]bool) {
	for _, it := range items {
		if getS(it, attrKind) == itemBlob && keep[getS(it, attrSK)] {
			for _, v := range chainOf(it) {
				keep[blobKey(getS(it, attrNS), getS(it, attrChannel), v)] = true
			}
		}
	}
}

// contentHash identifies a value's bytes: 12 bytes of SHA-256, base64.
func contentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// patchOf returns the chain of a blob item that is a patch and the hash of
// its whole value; nil for a whole value.
func patchOf(it item) (chain []string, hash string) { return chainOf(it), getS(it, attrHash) }

// isPatch reports whether a blob item (read with attrChain) is a patch.
func isPatch(it item) bool { return chainOf(it) != nil }

// blobPayload returns a blob item's payload attribute: the patch of a
// patch, else the value.
func blobPayload(it item) types.AttributeValue {
	if p, ok := it[attrPatch]; ok {
		return p
	}
	return it[attrValue]
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
