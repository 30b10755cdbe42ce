package dynamo

import (
	"context"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// Extensions. A blob must outlive every checkpoint that references it, and
// a checkpoint's writes must live as long as it does, so a put (the blobs it
// references) and SetExpiry (a checkpoint's blobs and writes) lengthen the
// expiry of items stored before, never shortening one and never bringing
// back one that expired (reads hid it already). Both plan them here:
//
//   - an extension is conditioned on the expiry the item was read with, so
//     that a racing extension is never undone; when the condition fails,
//     the item as stored is checked again;
//   - an offloaded payload's tags are extended before its item (retag): an
//     object whose tags say it may go while its item lives would be removed
//     by a bucket lifecycle rule under the item;
//   - a patch (patched.go) is never extended, as its chain would not be:
//     its whole value is written in its place, with the later expiry.
type extension struct {
	key              item
	channel, version string // of a blob, to read a patch's whole value
	ref              string // the offloaded payload of the item extended, "" for none
	from, to         int64  // the expiry it has, and the one it gets (0: never)
	whole            item   // a patch's whole value, written in its place
	tagged           bool   // ref's tags say to already
}

// op returns the write of the extension.
func (e *extension) op() awsx.WriteOp {
	if e.whole != nil {
		return awsx.WriteOp{Item: e.whole, Cond: expiresAt(e.from)}
	}
	return awsx.WriteOp{Item: e.key, Set: expirySet(e.to), Cond: expiresAt(e.from)}
}

// extensionOps returns the writes of exts, in order.
func extensionOps(exts []*extension) []awsx.WriteOp {
	ops := make([]awsx.WriteOp, len(exts))
	for i, e := range exts {
		ops[i] = e.op()
	}
	return ops
}

// extender plans the extensions of one put or SetExpiry.
type extender struct {
	s    *Store
	ns   saver.CheckpointRef // the namespace of the items, to read a patch's whole value
	rule rule
}

// A rule says the expiry an item stored with exp (0: never) must get, and
// whether it needs one.
type rule interface {
	until(exp int64) (int64, bool)
}

// putRule is the rule of a put whose checkpoint expires at cp, at now: a
// blob it references is extended as saver.ExtendedBlobExpiry says.
type putRule struct {
	cp  int64
	now time.Time
}

func (r putRule) until(exp int64) (int64, bool) { return saver.ExtendedBlobExpiry(r.cp, exp, r.now) }

// expiryRule is the rule of SetExpiry to exp: an item that expires sooner
// (or at all, for exp 0) is extended to it.
type expiryRule struct{ exp int64 }

func (r expiryRule) until(stored int64) (int64, bool) {
	return r.exp, stored != 0 && (r.exp == 0 || stored < r.exp)
}

// stored is what an item as stored needs.
type stored struct {
	gone bool       // absent or expired: nothing to extend
	exp  int64      // its expiry as stored (0: never)
	ext  *extension // nil: it lives long enough as it is
}

// check decides about an item as stored (old; nil if absent): the blob of
// channel at version, or a write (channel ""). prev is the extension planned
// for it before, if any: a retag it made to the same expiry stays done.
func (x *extender) check(ctx context.Context, key item, channel, version string, old item, prev *extension) (stored, error) {
	exp := getN(old, attrExpiresAt)
	if old == nil || x.s.expired(exp) {
		return stored{gone: true}, nil
	}
	to, ok := x.rule.until(exp)
	if !ok {
		return stored{exp: exp}, nil
	}
	e := &extension{key: key, channel: channel, version: version, ref: valueRef(old), from: exp, to: to}
	whole, err := patches{x.s}.whole(ctx, x.ns, channel, version, old, to)
	if err != nil {
		return stored{}, err
	}
	if whole != nil {
		// Its payload, if offloaded, is a new object tagged with to.
		e.whole, e.ref, e.tagged = whole, valueRef(whole), true
	}
	if prev != nil && prev.tagged && prev.ref == e.ref && prev.to == e.to {
		e.tagged = true
	}
	return stored{exp: exp, ext: e}, nil
}

// extend plans the extension of the blob at key, known to expire at from
// and to hold ref (from its lifetimes entry).
func (x *extender) extend(key item, ref string, from int64) *extension {
	to, _ := x.rule.until(from)
	return &extension{key: key, ref: ref, from: from, to: to}
}

// retag extends the tags of the offloaded payloads of exts that do not say
// their new expiry yet: before the request that extends their items.
func (x *extender) retag(ctx context.Context, exts ...*extension) error {
	for _, e := range exts {
		if e.tagged {
			continue
		}
		if err := x.s.retag(ctx, e.ref, e.to); err != nil {
			return err
		}
		e.tagged = true
	}
	return nil
}

// retag keeps the expiry tag of an offloaded payload (ref; "" for none) in
// step with its item's new expiry, before the item gets it.
func (s *Store) retag(ctx context.Context, ref string, exp int64) error {
	if s.Offload == nil || ref == "" {
		return nil
	}
	return s.Offload.Retag(ctx, ref, exp)
}
