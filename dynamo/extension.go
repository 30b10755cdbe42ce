package dynamo

import (
	"context"

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

// extender plans the extensions of one put or SetExpiry.
type extender struct {
	s  *Store
	ns saver.CheckpointRef // the namespace of the items, to read a patch's whole value
	// until returns the expiry an item stored with exp (0: never) must
	// get, and whether it needs one.
	until func(exp int64) (int64, bool)
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
	to, ok := x.until(exp)
	if !ok {
		return stored{exp: exp}, nil
	}
	e := &extension{key: key, channel: channel, version: version, ref: valueRef(old), from: exp, to: to}
	whole, err := x.s.patches().whole(ctx, x.ns, channel, version, old, to)
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
	to, _ := x.until(from)
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
