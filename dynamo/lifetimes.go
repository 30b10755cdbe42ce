package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// Blob lifetimes. Blobs are shared: a put brings the blobs of the channels
// that changed and references the others, written by earlier puts with
// earlier expiries, and saver.ExtendedBlobExpiry says which of those it must
// extend. Reading their expiries first would cost every put a request, and
// a ConditionCheck per referenced blob costs write units per blob (DynamoDB
// bills a transaction's checks as writes of the checked items). So each
// namespace of a thread keeps one small item, its lifetimes:
//
//	SK  x!<ns>!     ch:<channel> = {v: version, e: expiry (0: never),
//	                                r: offloaded value's reference, if any,
//	                                p, h: a patch, the content hash (patched.go)}
//
// with an entry per channel for the version last brought or extended, whose
// blob lives at least until e. An entry may say less than its blob has,
// never more: it is set in the transaction that gives the blob that expiry,
// and expiries never come down. Each put that brings or references blobs
// updates the lifetimes item inside the transaction that writes it: it
// sets the entries of the blobs it brings, and is conditioned on the entry
// of each blob it references (same version, never or at least as late as
// the checkpoint). In the common case that is all: no request more, and the
// write units of a small item (2 for one under 1 KB, about a dozen
// channels: TestMeasureBlobGuards) whatever the number of references,
// where a check per blob would cost 2 or more each.
//
// When an entry says its blob expires too early, DynamoDB cancels the
// transaction and returns the lifetimes item as stored; the next request
// extends the blob (conditioned on the expiry the entry gave) and its entry
// along with the put. Blobs live twice the remaining lifetime of the
// checkpoint that brought or last extended them, so an unchanged channel is
// extended about once per lifetime: one request more, then. When no entry
// vouches for a blob (another version: a fork; a channel the item has not
// seen; the item expired), the put reads the blob's expiry with one
// BatchGetItem (projected, no payload), extends it if needed and records
// its entry: two requests more, once. Without an expiry (the default
// policy) entries say "never" and nothing is ever extended, unless the
// thread's scope just became forever.
//
// A blob a put brings is inserted if absent (or expired); one stored and
// live keeps its value and is handled as referenced, so that no expiry is
// ever shortened. A blob that has expired is never brought back: reads hide
// it, as they hid it from the parent.
const (
	kindLifetimes  = "x"
	itemLifetimes  = "lifetimes"
	entryPrefix    = "ch:"
	entryVersion   = "v"
	entryExpiresAt = "e"
	entryRef       = "r"
	entryPatched   = "p" // the blob is a patch (patched.go): never extended as it is
	entryHash      = "h" // contentHash of the blob's whole value, when the put knew it
)

// lifetimesKey is the primary key of a namespace's lifetimes item.
func lifetimesKey(pk, ns string) item {
	return item{attrPK: attrS(pk), attrSK: attrS(key(kindLifetimes, part(ns, maxNSPart)))}
}

// entry returns the lifetimes entry of channel, ok false if none.
func entry(lifetimes item, channel string) (e blobRef, ok bool) {
	m, ok := lifetimes[entryPrefix+channel].(*types.AttributeValueMemberM)
	if !ok {
		return blobRef{}, false
	}
	_, patched := m.Value[entryPatched]
	return blobRef{channel: channel, version: getS(m.Value, entryVersion), exp: getN(m.Value, entryExpiresAt), ref: getS(m.Value, entryRef),
		patched: patched, hash: getS(m.Value, entryHash)}, true
}

// entryValue is the lifetimes entry of a blob expiring at exp.
func entryValue(r blobRef, exp int64) types.AttributeValue {
	m := item{entryVersion: attrS(r.version), entryExpiresAt: attrN(exp)}
	if r.ref != "" {
		m[entryRef] = attrS(r.ref)
	}
	if r.patched {
		m[entryPatched] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if r.hash != "" {
		m[entryHash] = attrS(r.hash)
	}
	return &types.AttributeValueMemberM{Value: m}
}

// lasts reports whether a blob expiring at blob (0: never) lives as long as
// a checkpoint expiring at cp.
func lasts(blob, cp int64) bool { return blob == 0 || (cp != 0 && blob >= cp) }

// refAct is what a put's next request does about a blob it references.
type refAct int

const (
	refVouched refAct = iota // the lifetimes entry vouches for it: checked
	refUnknown               // to read before the next request
	refExtend                // extend it from one expiry to another
	refKnown                 // its expiry is known and long enough: recorded
	refSkip                  // nothing: it is gone or has expired
)

// blobRef is a blob a put references without bringing it, or brings but
// finds stored already.
type blobRef struct {
	key              item
	channel, version string
	ref              string // its value's offloaded reference, if any
	act              refAct
	exp              int64      // refKnown: the expiry it has (0: never)
	ext              *extension // refExtend's
	patched          bool       // a patch (patched.go)
	hash             string     // contentHash of its whole value, if known (a blob brought)
	// known is the value the store remembers at this version, which the
	// put conditions on (the entry's hash) and records (known.go); nil
	// once the put learnt the stored blob may differ.
	known *knownValue
}

// opRole says which part of a put plan an op of its last request was.
type opRole struct {
	kind int // roleLifetimes, roleRef, roleBlob, roleCheckpoint
	i    int // index in refs or blobs
}

const (
	roleLifetimes = iota
	roleRef
	roleBlob
	roleCheckpoint
)

// putPlan is a put on its way: the items it writes and the conditions on
// the blobs it references, revised from the conditions each request failed
// on.
type putPlan struct {
	s       *Store
	exp     int64 // the checkpoint's
	now     time.Time
	blobExp int64          // the blobs brought
	lkey    item           // the namespace's lifetimes item
	blobs   []awsx.WriteOp // the blobs brought
	brought []blobRef      // their channels and versions
	dropped []bool         // blobs found stored and live: refs now
	refs    []blobRef
	patched []*patchedBlob // blobs brought as patches (see patched.go)
	cp      awsx.WriteOp
	ext     *extender  // of the blobs it references
	roles   []opRole   // of the ops of the last request
	guard   *headGuard // of a put with ExpectHead (see head.go)
	in      *saver.PutCheckpoint
}

// planPut builds the first request of a put: its new blobs, its checkpoint
// item and the condition on the blobs it references. A put with ExpectHead
// reads the head first, and goes no further if it moved.
func (s *Store) planPut(ctx context.Context, in *saver.PutCheckpoint) (*putPlan, error) {
	p := &putPlan{s: s, exp: in.ExpiresAt, now: s.Now(), in: in}
	p.ext = &extender{s: s, ns: in.CheckpointRef, until: func(exp int64) (int64, bool) {
		return saver.ExtendedBlobExpiry(p.exp, exp, p.now)
	}}
	pk := partitionKey(in.Tenant, in.ThreadID)
	if in.ExpectHead != nil {
		g, err := s.guardHead(ctx, in, pk)
		if err != nil {
			return nil, err
		}
		p.guard = g
	}
	p.lkey = lifetimesKey(pk, in.NS)
	p.blobExp = newBlobExpiry(p.exp, p.now)
	brought := make(map[[2]string]bool, len(in.Blobs))
	for _, b := range in.Blobs {
		var (
			it      item
			patched *patchedBlob
			err     error
		)
		hash := s.hashFor(b)
		it, patched = s.patchItem(in.CheckpointRef, pk, b, hash, p.exp)
		if hash == "" && s.recent != nil {
			hash = contentHash(b.Value.Data) // for known.go
		}
		if patched == nil {
			if it, err = s.blobItem(ctx, in.CheckpointRef, b, p.blobExp); err != nil {
				return nil, fmt.Errorf("blob %s: %w", b.Channel, err)
			}
		}
		p.patched = append(p.patched, patched)
		p.blobs = append(p.blobs, awsx.WriteOp{Item: it, Cond: absentOrExpired(p.now)})
		p.brought = append(p.brought, blobRef{key: keyOf(it), channel: b.Channel, version: b.Version, ref: valueRef(it),
			patched: patched != nil, hash: hash})
		brought[[2]string{b.Channel, b.Version}] = true
	}
	p.dropped = make([]bool, len(p.blobs))
	var channels []string
	for ch, v := range in.ChannelVersions {
		if !brought[[2]string{ch, v}] {
			channels = append(channels, ch)
		}
	}
	slices.Sort(channels) // deterministic requests
	for _, ch := range channels {
		v := in.ChannelVersions[ch]
		key := item{attrPK: attrS(pk), attrSK: attrS(blobKey(in.NS, ch, v))}
		p.refs = append(p.refs, blobRef{key: key, channel: ch, version: v, known: s.knownRef(pk, in.NS, ch, v)})
	}
	it, err := s.checkpointItem(ctx, &in.Checkpoint, p.exp)
	if err != nil {
		return nil, err
	}
	if hint := s.chainsHint(pk, in, in.Blobs, p.patched); hint != nil {
		it[attrChains] = hint
	}
	it[attrBrought] = broughtAttr(in)
	if known := p.knownAttr(); known != nil {
		it[attrKnown] = known
	}
	p.cp = awsx.WriteOp{Item: it}
	return p, nil
}

// next reads the blobs no entry vouches for and retags the payloads of the
// blobs to extend, then returns the ops of the plan's next request.
func (p *putPlan) next(ctx context.Context) ([]awsx.WriteOp, error) {
	if err := p.readUnknown(ctx); err != nil {
		return nil, err
	}
	// A known value is recorded only under the lifetimes entry's check.
	for i := range p.refs {
		if r := &p.refs[i]; r.known != nil && r.act != refVouched {
			r.known = nil
			forget(p.cp.Item, r.channel)
		}
	}
	for _, r := range p.refs {
		if r.act == refExtend {
			if err := p.ext.retag(ctx, r.ext); err != nil {
				return nil, err
			}
		}
	}
	return p.ops(), nil
}

// ops returns the ops of the plan's next request, in order: the lifetimes
// item and extensions first, then the new blobs, the checkpoint last.
func (p *putPlan) ops() []awsx.WriteOp {
	p.roles = p.roles[:0]
	var ops []awsx.WriteOp
	add := func(op awsx.WriteOp, r opRole) {
		ops = append(ops, op)
		p.roles = append(p.roles, r)
	}
	lifetimes, checks := p.lifetimesOp()
	add(lifetimes, opRole{kind: roleLifetimes})
	for i, r := range p.refs {
		if r.act == refExtend {
			add(r.ext.op(), opRole{roleRef, i})
		}
	}
	for i, b := range p.blobs {
		if !p.dropped[i] {
			add(b, opRole{roleBlob, i})
		}
	}
	add(p.cp, opRole{kind: roleCheckpoint})
	// A lifetimes item that checks nothing only records entries: when that
	// would take a request more (a put of 99 new blobs), the entries are
	// left out, and the first put that references those blobs reads them.
	if !checks && len(awsx.Chunks(ops)) > len(awsx.Chunks(ops[1:])) {
		ops, p.roles = ops[1:], p.roles[1:]
	}
	if len(ops) == 2 && !checks && len(p.blobs) == 0 && len(p.refs) == 0 {
		ops, p.roles = ops[1:], p.roles[1:] // nothing brought or referenced
	}
	return ops
}

// lifetimesOp returns the update of the lifetimes item: the entries this
// put records (the blobs it brings, and the expiries it learnt or gave),
// conditioned on the entries that vouch for the blobs it references, and
// whether there is any such condition. A conditional put sets the head
// token too, conditioned on it (see head.go).
func (p *putPlan) lifetimesOp() (awsx.WriteOp, bool) {
	c, u := awsx.NewExpr("c"), awsx.NewExpr("u")
	var conds []string
	for _, r := range p.refs {
		if r.act != refVouched {
			continue
		}
		e := c.Path(entryPrefix+r.channel, entryExpiresAt)
		cond := c.Path(entryPrefix+r.channel, entryVersion) + " = " + c.Value(attrS(r.version)) + " AND (" + e + " = " + c.Value(attrN(0))
		if p.exp != 0 {
			cond += " OR " + e + " >= " + c.Value(attrN(p.exp))
		}
		cond = "(" + cond + "))"
		if r.known != nil {
			cond += " AND " + c.Path(entryPrefix+r.channel, entryHash) + " = " + c.Value(attrS(r.known.hash))
		}
		conds = append(conds, cond)
	}
	conds = append(conds, p.patchConds(c)...)
	if p.guard != nil {
		conds = append(conds, p.guard.cond(c))
	}
	// One entry per channel: the version the checkpoint references wins
	// over another brought with it (an entry may say less, never more, so
	// any of them would do).
	var (
		channels []string
		entries  = map[string]types.AttributeValue{}
	)
	set := func(r blobRef, exp int64) {
		if _, ok := entries[r.channel]; !ok {
			channels = append(channels, r.channel)
		}
		entries[r.channel] = entryValue(r, exp)
	}
	for i, b := range p.brought {
		switch {
		case p.dropped[i]:
		case p.patched[i] != nil:
			set(b, p.patched[i].exp)
		default:
			set(b, p.blobExp)
		}
	}
	for _, r := range p.refs {
		switch r.act {
		case refExtend:
			set(r, r.ext.to)
		case refKnown:
			set(r, r.exp)
		}
	}
	sets := []string{u.Name(attrKind) + " = " + u.Value(attrS(itemLifetimes))}
	if p.guard != nil {
		sets = append(sets, u.Name(attrHead)+" = "+u.Value(p.guard.token()))
	}
	for _, ch := range channels {
		sets = append(sets, u.Name(entryPrefix+ch)+" = "+u.Value(entries[ch]))
	}
	// The item lives as long as the blobs it brings, or forever. Its own
	// expiry protects nothing: once it is gone, puts read their blobs.
	u.Text = "SET " + strings.Join(sets, ", ")
	if p.exp == 0 {
		u.Text += " REMOVE " + u.Name(attrExpiresAt)
	} else {
		u.Text += ", " + u.Name(attrExpiresAt) + " = " + u.Value(attrN(p.blobExp))
	}
	op := awsx.WriteOp{Item: p.lkey, Set: u}
	if len(conds) > 0 {
		c.Text = strings.Join(conds, " AND ")
		op.Cond = c
	}
	return op, len(conds) > 0
}

// revise turns the conditions the last request failed on into the next
// request; next reads the blobs no entry vouches for then.
func (p *putPlan) revise(ctx context.Context, failed map[int]item) error {
	for i, old := range failed {
		r := p.roles[i]
		switch r.kind {
		case roleLifetimes:
			// A patch's base is no longer the channel's version: store
			// the whole value instead.
			if err := p.unpatch(ctx, p.in.CheckpointRef, p.in.Blobs); err != nil {
				return err
			}
			if p.guard != nil && !p.guard.accepts(old) {
				if err := p.guard.revise(ctx, p.s, old); err != nil {
					return err
				}
			}
			p.reviseLifetimes(old)
		case roleRef:
			if err := p.reviseRef(ctx, &p.refs[r.i], old); err != nil {
				return err
			}
		case roleBlob:
			// Stored and live: insert-if-absent leaves its value, and the
			// put handles it as a blob it references.
			p.dropped[r.i] = true
			forget(p.cp.Item, p.brought[r.i].channel)
			p.refs = append(p.refs, p.brought[r.i])
			if err := p.reviseRef(ctx, &p.refs[len(p.refs)-1], old); err != nil {
				return err
			}
		default:
			return fmt.Errorf("condition failed on the checkpoint item")
		}
	}
	return nil
}

// reviseLifetimes reads the lifetimes item as stored when its condition
// failed: entries that vouch stay checked, a live entry of the same version
// that says too early gives the expiry to extend from (the blob's own, if
// later, comes back when that extension fails), and the other blobs are
// read by the next request.
func (p *putPlan) reviseLifetimes(old item) {
	live := old != nil && !p.s.expired(getN(old, attrExpiresAt))
	for i := range p.refs {
		r := &p.refs[i]
		if r.act != refVouched {
			continue
		}
		e, ok := entry(old, r.channel)
		if r.known != nil && (!live || !ok || e.version != r.version || e.hash != r.known.hash) {
			if live && ok && e.version == r.version {
				// The stored blob holds other bytes than remembered (a
				// thread put again after a delete), or its entry no
				// hash to check: the next put would fail here again.
				p.s.unremember(getS(p.lkey, attrPK), p.in.NS, r.channel, r.version)
			}
			r.known = nil
			forget(p.cp.Item, r.channel)
		}
		switch {
		case !live || !ok || e.version != r.version || (e.exp != 0 && p.s.expired(e.exp)):
			// No entry vouches, or its blob may have expired (it is
			// not brought back): read it.
			r.act = refUnknown
		case lasts(e.exp, p.exp):
		case e.patched:
			// A patch is stored whole to be extended: read it.
			r.act = refUnknown
		default:
			// The entry keeps its hash: the blob is the one it describes.
			r.act, r.ext, r.ref, r.hash = refExtend, p.ext.extend(r.key, e.ref, e.exp), e.ref, e.hash
		}
	}
}

// readUnknown reads the expiries of the blobs no entry vouches for, one
// BatchGetItem per 100, and decides about each.
func (p *putPlan) readUnknown(ctx context.Context) error {
	var keys []item
	for _, r := range p.refs {
		if r.act == refUnknown {
			keys = append(keys, r.key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	proj := awsx.NewExpr("p")
	proj.Text = strings.Join([]string{proj.Name(attrPK), proj.Name(attrSK), proj.Name(attrExpiresAt), proj.Path(attrValue, payloadRef), proj.Name(attrChain)}, ", ")
	found, err := p.s.table.BatchGet(ctx, keys, proj)
	if err != nil {
		return err
	}
	stored := make(map[string]item, len(found))
	for _, it := range found {
		stored[getS(it, attrSK)] = it
	}
	for i := range p.refs {
		if r := &p.refs[i]; r.act == refUnknown {
			if err := p.reviseRef(ctx, r, stored[getS(r.key, attrSK)]); err != nil {
				return err
			}
		}
	}
	return nil
}

// reviseRef decides about a referenced blob from its item as stored: extend
// it, record the expiry it has, or nothing if it is gone or has expired.
func (p *putPlan) reviseRef(ctx context.Context, r *blobRef, old item) error {
	v, err := p.ext.check(ctx, r.key, r.channel, r.version, old, r.ext)
	if err != nil {
		return err
	}
	r.ref, r.patched, r.hash, r.ext = valueRef(old), chainOf(old) != nil, "", nil
	switch {
	case v.gone:
		r.act = refSkip
	case v.ext == nil:
		r.act, r.exp = refKnown, v.exp
	default:
		// A patch extends as its whole value.
		r.act, r.ext, r.ref, r.patched = refExtend, v.ext, v.ext.ref, false
	}
	return nil
}

// newBlobExpiry is the expiry of the blobs a put brings: twice the
// remaining lifetime of its checkpoint, as if the rule had just extended
// them. Blobs taking only the checkpoint's expiry would need extending by
// the very next put that references them, which in a session thread is
// most puts; with twice, once per lifetime is enough.
func newBlobExpiry(exp int64, now time.Time) int64 {
	if exp == 0 {
		return 0
	}
	return exp + max(exp-now.Unix(), 0)
}

// valueRef returns the offloaded reference of an item's value, "" if none.
func valueRef(it item) string {
	if m, ok := it[attrValue].(*types.AttributeValueMemberM); ok {
		return getS(m.Value, payloadRef)
	}
	return ""
}
