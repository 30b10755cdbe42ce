package dynamo

import (
	"context"
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
// bills a transaction's checks as writes of the checked items). So the
// namespace's item (nsitem.go) keeps their lifetimes:
//
//	SK  x!<ns>!     ch:<channel> = {v: version, e: expiry (0: never),
//	                                r: offloaded value's reference, if any,
//	                                p, h: a patch, the content hash (patched.go)}
//
// with an entry per channel for the version last brought or extended, whose
// blob lives at least until e. An entry may say less than its blob has,
// never more: it is set in the transaction that gives the blob that expiry,
// and expiries never come down. Each put that brings or references blobs
// updates the namespace item inside the transaction that writes it: it
// sets the entries of the blobs it brings, and is conditioned on the entry
// of each blob it references (same version, never or at least as late as
// the checkpoint). In the common case that is all: no request more, and the
// write units of a small item (2 for one under 1 KB, about a dozen
// channels: TestMeasureBlobGuards) whatever the number of references,
// where a check per blob would cost 2 or more each.
//
// When an entry says its blob expires too early, DynamoDB cancels the
// transaction and returns the namespace item as stored; the next request
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
	entryPrefix    = "ch:"
	entryVersion   = "v"
	entryExpiresAt = "e"
	entryRef       = "r"
	entryPatched   = "p" // the blob is a patch (patched.go): never extended as it is
	entryHash      = "h" // contentHash of the blob's whole value, when the put knew it
)

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
// finds stored already; or what a lifetimes entry says of one.
type blobRef struct {
	key              item
	channel, version string
	ref              string // its value's offloaded reference, if any
	act              refAct
	exp              int64      // refKnown: the expiry it has (0: never)
	ext              *extension // refExtend's
	patched          bool       // a patch (patched.go)
	hash             string     // contentHash of its whole value, if known (a blob brought)
}

// lifetimesPart is the blob lifetimes of a put, a part of its namespace
// item: the entries of the blobs it brings, and the blobs it references,
// each vouched for by its entry (a condition), or read, extended (with the
// extender) and recorded.
type lifetimesPart struct {
	s        *Store
	exp      int64 // the checkpoint's
	blobExp  int64 // the blobs brought
	brought  []*newBlob
	refs     []*blobRef
	ext      *extender
	extended []*blobRef // the refs extended by the last request, in order
}

// newLifetimesPart returns the lifetimes of a put: every blob its
// checkpoint references without bringing it is vouched for by its entry,
// to begin with.
func (s *Store) newLifetimesPart(in *saver.PutCheckpoint, pk string, brought []*newBlob, blobExp int64, now time.Time) *lifetimesPart {
	l := &lifetimesPart{s: s, exp: in.ExpiresAt, blobExp: blobExp, brought: brought}
	l.ext = &extender{s: s, ns: in.CheckpointRef, rule: putRule{cp: in.ExpiresAt, now: now}}
	isBrought := make(map[[2]string]bool, len(brought))
	for _, b := range brought {
		isBrought[[2]string{b.blob.Channel, b.blob.Version}] = true
	}
	var channels []string
	for ch, v := range in.ChannelVersions {
		if !isBrought[[2]string{ch, v}] {
			channels = append(channels, ch)
		}
	}
	slices.Sort(channels) // deterministic requests
	for _, ch := range channels {
		v := in.ChannelVersions[ch]
		key := item{attrPK: attrS(pk), attrSK: attrS(blobKey(in.NS, ch, v))}
		l.refs = append(l.refs, &blobRef{key: key, channel: ch, version: v})
	}
	return l
}

// len is the number of blobs the put references.
func (l *lifetimesPart) len() int { return len(l.refs) }

// update returns the conditions on the entries that vouch for the blobs the
// put references (same version, never or at least as late as the
// checkpoint) and the entries the put records.
func (l *lifetimesPart) update(c, u *awsx.Expr, _ item) (conds, sets []string) {
	for _, r := range l.refs {
		if r.act != refVouched {
			continue
		}
		e := c.Path(entryPrefix+r.channel, entryExpiresAt)
		cond := c.Path(entryPrefix+r.channel, entryVersion) + " = " + c.Value(attrS(r.version)) + " AND (" + e + " = " + c.Value(attrN(0))
		if l.exp != 0 {
			cond += " OR " + e + " >= " + c.Value(attrN(l.exp))
		}
		conds = append(conds, "("+cond+"))")
	}
	return conds, l.entries(u)
}

// entries returns the entries the put records: the blobs it brings, and the
// expiries it learnt or gave. One entry per channel: the version the
// checkpoint references wins over another brought with it (an entry may
// say less, never more, so any of them would do).
func (l *lifetimesPart) entries(u *awsx.Expr) []string {
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
	for _, b := range l.brought {
		if !b.dropped {
			set(b.entry, b.exp)
		}
	}
	for _, r := range l.refs {
		switch r.act {
		case refExtend:
			set(*r, r.ext.to)
		case refKnown:
			set(*r, r.exp)
		}
	}
	sets := make([]string, len(channels))
	for i, ch := range channels {
		sets[i] = u.Name(entryPrefix+ch) + " = " + u.Value(entries[ch])
	}
	return sets
}

// refuted reads the namespace item as stored when its condition failed:
// entries that vouch stay checked, a live entry of the same version that
// says too early gives the expiry to extend from (the blob's own, if later,
// comes back when that extension fails), and the other blobs are read
// before the next request (next).
func (l *lifetimesPart) refuted(_ context.Context, old item) error {
	live := old != nil && !l.s.expired(getN(old, attrExpiresAt))
	for _, r := range l.refs {
		if r.act != refVouched {
			continue
		}
		e, ok := entry(old, r.channel)
		switch {
		case !live || !ok || e.version != r.version || (e.exp != 0 && l.s.expired(e.exp)):
			// No entry vouches, or its blob may have expired (it is
			// not brought back): read it.
			r.act = refUnknown
		case lasts(e.exp, l.exp):
		case e.patched:
			// A patch is stored whole to be extended: read it.
			r.act = refUnknown
		default:
			// The entry keeps its hash: the blob is the one it describes.
			r.act, r.ext, r.ref, r.hash = refExtend, l.ext.extend(r.key, e.ref, e.exp), e.ref, e.hash
		}
	}
	return nil
}

// next reads the blobs no entry vouches for and retags the payloads of the
// blobs to extend, then returns the extensions of the next request, in
// order.
func (l *lifetimesPart) next(ctx context.Context) ([]awsx.WriteOp, error) {
	if err := l.readUnknown(ctx); err != nil {
		return nil, err
	}
	l.extended = l.extended[:0]
	var exts []*extension
	for _, r := range l.refs {
		if r.act == refExtend {
			l.extended = append(l.extended, r)
			exts = append(exts, r.ext)
		}
	}
	if len(exts) == 0 {
		return nil, nil
	}
	if err := l.ext.retag(ctx, exts...); err != nil {
		return nil, err
	}
	return extensionOps(exts), nil
}

// failed decides again about the i-th blob the last request extended, from
// its item as stored: another put extended it, or it is gone.
func (l *lifetimesPart) failed(ctx context.Context, i int, old item) error {
	return l.reviseRef(ctx, l.extended[i], old)
}

// found takes a blob the put brought and found stored and live (old): it
// is one it references now.
func (l *lifetimesPart) found(ctx context.Context, b blobRef, old item) error {
	r := &b
	l.refs = append(l.refs, r)
	return l.reviseRef(ctx, r, old)
}

// readUnknown reads the expiries of the blobs no entry vouches for, one
// BatchGetItem per 100, and decides about each.
func (l *lifetimesPart) readUnknown(ctx context.Context) error {
	var keys []item
	for _, r := range l.refs {
		if r.act == refUnknown {
			keys = append(keys, r.key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	proj := awsx.NewExpr("p")
	proj.Text = strings.Join([]string{proj.Name(attrPK), proj.Name(attrSK), proj.Name(attrExpiresAt), proj.Path(attrValue, payloadRef), proj.Name(attrChain)}, ", ")
	found, err := l.s.table.BatchGet(ctx, keys, proj)
	if err != nil {
		return err
	}
	stored := make(map[string]item, len(found))
	for _, it := range found {
		stored[getS(it, attrSK)] = it
	}
	for _, r := range l.refs {
		if r.act == refUnknown {
			if err := l.reviseRef(ctx, r, stored[getS(r.key, attrSK)]); err != nil {
				return err
			}
		}
	}
	return nil
}

// reviseRef decides about a referenced blob from its item as stored: extend
// it, record the expiry it has, or nothing if it is gone or has expired.
func (l *lifetimesPart) reviseRef(ctx context.Context, r *blobRef, old item) error {
	v, err := l.ext.check(ctx, r.key, r.channel, r.version, old, r.ext)
	if err != nil {
		return err
	}
	r.ref, r.patched, r.hash, r.ext = valueRef(old), isPatch(old), "", nil
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
