package dynamo

import (
	"bytes"
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// Values a read takes from memory. A session reads its thread's latest
// checkpoint at the start of every run, right after the replica put it, and
// the values that checkpoint references are mostly ones the replica
// remembers (recent.go): it brought them, or it referenced them at versions
// it remembered. So a put records in its checkpoint item what it knew of
// each value:
//
//	known  {channel: [type, content hash, expiry]} of the values at the
//	       checkpoint's versions whose bytes the put knew (brought, or
//	       remembered at that version); an empty value has the empty type
//
// and a read that finds a channel's entry matched by the remembered value
// (same version, type and content hash) takes that value, without reading
// its blob. A read whose every channel matches costs the checkpoint's Query
// alone, not a BatchGetItem more. The hash makes it safe across replicas
// and over time: another replica's put, a fork that reused a version
// string, or a thread deleted and put again hold other bytes, and are read
// from the table. An entry never hides a value: one whose expiry passed
// (the blob may have been extended since, or not) sends the read to the
// table, which knows.
const attrKnown = "known"

// knownValue is what a checkpoint item's known entry says of a value.
type knownValue struct {
	typ, hash string
	exp       int64 // 0: never
}

// knownRef returns what the store remembers (r, from recall) of a value a
// put references at version, if it has that version, has not expired, and
// a put of this store brought it (its lifetimes entry holds the hash to
// check).
func (ps patches) knownRef(r *recentValue, version string) *knownValue {
	if r == nil || !r.vouched || r.version != version || r.hash == "" || saver.Expired(r.exp, ps.s.Now()) {
		return nil
	}
	return &knownValue{typ: r.typ, hash: r.hash, exp: r.exp}
}

// knownPart is the known values of a put, a part of its namespace item:
// the values it references that the store remembers, which it records only
// under a condition on their lifetimes entries' hashes, and those it
// brings at the checkpoint's versions.
type knownPart struct {
	ps      patches
	pk, ns  string
	refs    []knownRef
	brought []knownBlob
	blobs   []*newBlob // every blob the put brings
}

// knownRef is a referenced value the put knows; value is nil once the put
// learnt the stored blob may differ, or that no entry vouches for it.
type knownRef struct {
	ref   *blobRef
	value *knownValue
}

// knownBlob is a value the put brings, as it was when the put began.
type knownBlob struct {
	blob  *newBlob
	value knownValue
}

// knownPart returns the known values of a put, from what the store
// remembers of its channels (mem, from recall); nil when it remembers
// nothing.
func (ps patches) knownPart(in *saver.PutCheckpoint, pk string, mem map[string]*recentValue, refs *lifetimesPart, brought []*newBlob) *knownPart {
	if mem == nil {
		return nil
	}
	k := &knownPart{ps: ps, pk: pk, ns: in.NS, blobs: brought}
	for _, r := range refs.refs {
		if v := ps.knownRef(mem[r.channel], r.version); v != nil {
			k.refs = append(k.refs, knownRef{ref: r, value: v})
		}
	}
	for _, b := range brought {
		if in.ChannelVersions[b.blob.Channel] == b.blob.Version {
			k.brought = append(k.brought, knownBlob{blob: b, value: knownValue{typ: b.blob.Value.Type, hash: b.entry.hash, exp: b.exp}})
		}
	}
	return k
}

// update returns the conditions that the lifetimes entries of the known
// values it references hold their hashes, and sets the checkpoint's known
// attribute: the values it brings, and those it references that the
// entries vouch for; none of a channel whose blob the put brought and found
// stored (another put's).
func (k *knownPart) update(c, _ *awsx.Expr, cp item) (conds, sets []string) {
	for _, r := range k.refs {
		if r.value != nil && r.ref.act == refVouched {
			conds = append(conds, c.Path(entryPrefix+r.ref.channel, entryHash)+" = "+c.Value(attrS(r.value.hash)))
		}
	}
	stored := map[string]bool{}
	for _, b := range k.blobs {
		stored[b.blob.Channel] = stored[b.blob.Channel] || b.dropped
	}
	m := item{}
	for _, r := range k.refs {
		if r.value != nil && r.ref.act == refVouched && !stored[r.ref.channel] {
			m[r.ref.channel] = knownEntry(*r.value)
		}
	}
	for _, b := range k.brought {
		if !stored[b.blob.blob.Channel] {
			m[b.blob.blob.Channel] = knownEntry(b.value)
		}
	}
	setMap(cp, attrKnown, m)
	return conds, nil
}

// refuted checks the known values against their entries as stored: one
// whose entry is gone, of another version or of another hash is not known
// any more, and when the entry names the version with other bytes (a
// thread put again after a delete) or no hash to check, the store forgets
// the value, else the next put would fail here again. Values whose entries
// no longer vouch are not recorded either.
func (k *knownPart) refuted(_ context.Context, old item) error {
	live := old != nil && !k.ps.s.expired(getN(old, attrExpiresAt))
	for i := range k.refs {
		r := &k.refs[i]
		if r.value == nil {
			continue
		}
		e, ok := entry(old, r.ref.channel)
		if !live || !ok || e.version != r.ref.version || e.hash != r.value.hash {
			if live && ok && e.version == r.ref.version {
				k.ps.forget(k.pk, k.ns, r.ref.channel, r.ref.version)
			}
			r.value = nil
		}
		if r.ref.act != refVouched {
			r.value = nil
		}
	}
	return nil
}

func knownEntry(k knownValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: []types.AttributeValue{attrS(k.typ), attrS(k.hash), attrN(k.exp)}}
}

// knownOf returns a checkpoint item's known entries; nil when it has none.
// A malformed entry is skipped: the read then takes the value from the table.
func knownOf(it item) map[string]knownValue {
	m, ok := it[attrKnown].(*types.AttributeValueMemberM)
	if !ok {
		return nil
	}
	out := make(map[string]knownValue, len(m.Value))
	for ch, av := range m.Value {
		l, ok := av.(*types.AttributeValueMemberL)
		if !ok || len(l.Value) != 3 {
			continue
		}
		typ, ok1 := l.Value[0].(*types.AttributeValueMemberS)
		hash, ok2 := l.Value[1].(*types.AttributeValueMemberS)
		exp, ok3 := l.Value[2].(*types.AttributeValueMemberN)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		n, err := strconv.ParseInt(exp.Value, 10, 64)
		if err != nil {
			continue
		}
		out[ch] = knownValue{typ: typ.Value, hash: hash.Value, exp: n}
	}
	return out
}

// fromMemory returns the value of a checkpoint's channel at version from
// the remembered values, when its known entry matches one; ok false sends
// the read to the table. A copy: the tuple's value goes to the caller.
func (ps patches) fromMemory(pk, ns, channel, version string, k knownValue, ok bool) (saver.Typed, bool) {
	if !ok || !ps.on() || saver.Expired(k.exp, ps.s.Now()) {
		return saver.Typed{}, false
	}
	r, found := ps.s.recent.get(recentKey{pk, ns, channel})
	if !found || r.version != version || r.typ != k.typ || r.hash != k.hash {
		return saver.Typed{}, false
	}
	return saver.Typed{Type: r.typ, Data: bytes.Clone(r.data)}, true
}

// forget drops the remembered value of a channel if it is still of version:
// the table holds other bytes under that version, or no hash the next put
// could check.
func (ps patches) forget(pk, ns, channel, version string) {
	if ps.on() {
		ps.s.recent.dropVersion(recentKey{pk, ns, channel}, version)
	}
}
