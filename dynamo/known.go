package dynamo

import (
	"bytes"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
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

// knownRef returns the value the store remembers of a channel a put
// references, if it has that version, has not expired, and a put of this
// store brought it (its lifetimes entry holds the hash to check).
func (s *Store) knownRef(pk, ns, channel, version string) *knownValue {
	if s.recent == nil {
		return nil
	}
	r, ok := s.recent.get(recentKey{pk, ns, channel})
	if !ok || !r.vouched || r.version != version || r.hash == "" || saver.Expired(r.exp, s.Now()) {
		return nil
	}
	return &knownValue{typ: r.typ, hash: r.hash, exp: r.exp}
}

// knownAttr returns the known attribute of a planned put: the blobs it
// brings at the checkpoint's versions, and the values it references that
// the store remembers, which the lifetimes item's entries vouch for by
// their hashes (lifetimesOp); nil when it knows none.
func (p *putPlan) knownAttr() types.AttributeValue {
	if p.s.recent == nil {
		return nil
	}
	m := item{}
	for _, r := range p.refs {
		if r.known != nil {
			m[r.channel] = knownEntry(*r.known)
		}
	}
	for i, b := range p.in.Blobs {
		if p.in.ChannelVersions[b.Channel] != b.Version {
			continue
		}
		exp := p.blobExp
		if d := p.patched[i]; d != nil {
			exp = d.exp
		}
		m[b.Channel] = knownEntry(knownValue{typ: b.Value.Type, hash: p.brought[i].hash, exp: exp})
	}
	if len(m) == 0 {
		return nil
	}
	return &types.AttributeValueMemberM{Value: m}
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

// forget removes a channel's known entry from a planned checkpoint item:
// the put learnt that the stored blob is not the one it knew of (another
// put stored that version first, or the blob is gone).
func forget(cp item, channel string) {
	if m, ok := cp[attrKnown].(*types.AttributeValueMemberM); ok {
		delete(m.Value, channel)
		if len(m.Value) == 0 {
			delete(cp, attrKnown)
		}
	}
}

// fromMemory returns the value of a checkpoint's channel at version from
// the remembered values, when its known entry matches one; ok false sends
// the read to the table. A copy: the tuple's value goes to the caller.
func (s *Store) fromMemory(pk, ns, channel, version string, k knownValue, ok bool) (saver.Typed, bool) {
	if !ok || s.recent == nil || saver.Expired(k.exp, s.Now()) {
		return saver.Typed{}, false
	}
	r, found := s.recent.get(recentKey{pk, ns, channel})
	if !found || r.version != version || r.typ != k.typ || r.hash != k.hash {
		return saver.Typed{}, false
	}
	return saver.Typed{Type: r.typ, Data: bytes.Clone(r.data)}, true
}

// unremember drops the remembered value of a channel if it is still of
// version: the table holds other bytes under that version, or no hash the
// next put could check.
func (s *Store) unremember(pk, ns, channel, version string) {
	if s.recent == nil {
		return
	}
	s.recent.dropVersion(recentKey{pk, ns, channel}, version)
}
