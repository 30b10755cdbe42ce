package dynamo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

var _ saver.Expirer = (*Store)(nil)

// SetExpiry sets a checkpoint's expiry and extends its blobs and writes to
// it (never shortening one, never bringing back one that expired): a Query
// for the checkpoint and its writes (projected: keys, expiries, versions and
// offloaded references, no payload), a BatchGetItem per 100 of its blobs
// (projected the same way), then one TransactWriteItems of the extensions,
// each conditioned on the expiry it was read with, and the checkpoint last,
// conditioned on its not having expired, then the tree index items of the
// checkpoint and of the errors and interrupts extended (treeindex.go); a
// TransactWriteItems of two when only the checkpoint changes. Offloaded payloads are retagged before their items
// are extended.
//
// Returns EINVALID for an empty ref.ID, ENOTFOUND if the checkpoint does
// not exist or has expired.
func (s *Store) SetExpiry(ctx context.Context, ref saver.CheckpointRef, expiresAt int64) error {
	if err := saver.RequireCheckpointID(ref); err != nil {
		return err
	}
	if err := s.setExpiry(ctx, ref, expiresAt); err != nil {
		return fmt.Errorf("dynamo: set expiry of checkpoint %s: %w", ref.ID, err)
	}
	return nil
}

func (s *Store) setExpiry(ctx context.Context, ref saver.CheckpointRef, exp int64) error {
	now := s.Now()
	cp, writes, err := s.checkpointWrites(ctx, ref)
	if err != nil {
		return err
	}
	if cp == nil || s.expired(getN(cp, attrExpiresAt)) {
		return saver.CheckpointNotFound(ref)
	}
	blobs, lifetimes, err := s.checkpointBlobs(ctx, ref, cp)
	if err != nil {
		return err
	}
	c := awsx.NewExpr("c")
	c.Text = fmt.Sprintf("attribute_exists(%s) AND (attribute_not_exists(%s) OR %s > %s)",
		c.Name(attrPK), c.Name(attrExpiresAt), c.Name(attrExpiresAt), c.Value(attrN(now.Unix())))
	p := &expiryPlan{
		ref: ref, exp: exp, lkey: lifetimesKey(getS(cp, attrPK), ref.NS), keepLifetimes: true,
		exts: map[string]*extension{}, entries: map[string]blobRef{},
		cp: awsx.WriteOp{Item: keyOf(cp), Set: expirySet(exp), Cond: c}, cpRefs: refs(cp),
	}
	p.x = &extender{s: s, ns: ref, rule: expiryRule{exp}}
	for _, it := range append(writes, blobs...) {
		if err := p.plan(ctx, it, lifetimes); err != nil {
			return err
		}
	}
	cp[attrNS], cp[attrID] = attrS(ref.NS), attrS(ref.ID)
	if p.node, err = nodeOp(cp, exp); err != nil { // treeindex.go
		return err
	}
	p.cp.Glue = true
	p.writes = writes
	return s.send(ctx, p, "The checkpoint's items kept changing; retry.")
}

// checkpointWrites reads a checkpoint and its writes, projected on their
// keys, expiries, versions, offloaded references and the fields of their
// tree index items: nil if it is absent.
func (s *Store) checkpointWrites(ctx context.Context, ref saver.CheckpointRef) (cp item, writes []item, err error) {
	proj := awsx.NewExpr("p")
	proj.Text = strings.Join([]string{
		proj.Name(attrPK), proj.Name(attrSK), proj.Name(attrKind), proj.Name(attrExpiresAt), proj.Name(attrVersions),
		proj.Path(attrBody, payloadRef), proj.Path(attrValue, payloadRef),
		// what the tree index items of the checkpoint and its flags hold
		proj.Name(attrNS), proj.Name(attrID), proj.Name(attrParent), proj.Name(attrSource), proj.Name(attrStep),
		proj.Name(attrParents), proj.Name(attrTaskID), proj.Name(attrIdx),
	}, ", ")
	err = s.table.Query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression: ptr("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: item{
			":pk": attrS(partitionKey(ref.Tenant, ref.ThreadID)),
			":sk": attrS(checkpointKey(ref.NS, ref.ID)),
		},
		ExpressionAttributeNames: proj.Names,
		ProjectionExpression:     &proj.Text,
	}, func(page []item) bool {
		for _, it := range page {
			switch getS(it, attrKind) {
			case itemCheckpoint:
				cp = it
			case itemWrite:
				writes = append(writes, it)
			}
		}
		return true
	})
	return cp, writes, err
}

// checkpointBlobs reads the blobs of a checkpoint and its namespace's
// lifetimes item (nil if none) in one BatchGetItem per 100, projected on
// keys, expiries, references, chains and the entries of its channels.
func (s *Store) checkpointBlobs(ctx context.Context, ref saver.CheckpointRef, cp item) (blobs []item, lifetimes item, err error) {
	pk := getS(cp, attrPK)
	lkey := lifetimesKey(pk, ref.NS)
	var keys []item
	proj := awsx.NewExpr("p")
	fields := []string{proj.Name(attrPK), proj.Name(attrSK), proj.Name(attrExpiresAt), proj.Name(attrChannel), proj.Name(attrVersion), proj.Path(attrValue, payloadRef), proj.Name(attrChain)}
	for ch, v := range stringMap(cp[attrVersions]) {
		keys = append(keys, item{attrPK: attrS(pk), attrSK: attrS(blobKey(ref.NS, ch, v))})
		fields = append(fields, proj.Name(entryPrefix+ch))
	}
	proj.Text = strings.Join(fields, ", ")
	found, err := s.table.BatchGet(ctx, append(keys, lkey), proj)
	for _, it := range found {
		if getS(it, attrSK) == getS(lkey, attrSK) {
			lifetimes = it
		} else {
			blobs = append(blobs, it)
		}
	}
	return blobs, lifetimes, err
}

// expiryPlan is a SetExpiry on its way: the extensions of the checkpoint's
// blobs and writes, the lifetimes entries of the blobs extended, and the
// checkpoint's new expiry, last.
type expiryPlan struct {
	ref  saver.CheckpointRef
	exp  int64
	x    *extender
	exts map[string]*extension // by sort key
	// entries are the lifetimes entries of the blobs extended (by sort
	// key), where the lifetimes item has them at the same version or not
	// at all, so that the next puts need not find out. They go only while
	// their blob's extension does, so that no entry vouches for a blob
	// that turned out gone, and not at all once the item turned out gone.
	entries       map[string]blobRef
	lkey          item
	keepLifetimes bool
	cp            awsx.WriteOp
	node          awsx.WriteOp // the checkpoint's index item, after it
	writes        []item       // the checkpoint's, for their index items
	cpRefs        []string     // the checkpoint's offloaded payloads, retagged once
	sks           []string     // the extensions of the last request, in order
	first         int          // the index of the first extension in it
}

// plan adds what an item of the checkpoint needs: an extension, and a
// lifetimes entry for a blob extended.
func (p *expiryPlan) plan(ctx context.Context, it, lifetimes item) error {
	ch, v := getS(it, attrChannel), getS(it, attrVersion)
	st, err := p.x.check(ctx, keyOf(it), ch, v, it, nil)
	if err != nil || st.ext == nil {
		return err
	}
	sk := getS(it, attrSK)
	p.exts[sk] = st.ext
	if ch == "" || getS(it, attrKind) == itemWrite || lifetimes == nil {
		return nil
	}
	if e, ok := entry(lifetimes, ch); !ok || e.version == v {
		// The hash stays: extending a blob (or storing a patch whole)
		// leaves its value's bytes as they were, and known values and
		// patch bases are checked against it.
		p.entries[sk] = blobRef{channel: ch, version: v, ref: st.ext.ref, hash: e.hash}
	}
	return nil
}

// next retags the offloaded payloads, then returns the lifetimes update
// (if any), the extensions and the checkpoint.
func (p *expiryPlan) next(ctx context.Context) ([]awsx.WriteOp, error) {
	p.sks = slices.Sorted(maps.Keys(p.exts))
	exts := make([]*extension, len(p.sks))
	for i, sk := range p.sks {
		exts[i] = p.exts[sk]
	}
	if err := p.x.retag(ctx, exts...); err != nil {
		return nil, err
	}
	for _, ref := range p.cpRefs {
		if err := p.x.s.retag(ctx, ref, p.exp); err != nil {
			return nil, err
		}
	}
	p.cpRefs = nil
	var ops []awsx.WriteOp
	if op := p.lifetimesOp(); op != nil {
		ops = append(ops, *op)
	}
	p.first = len(ops)
	ops = append(ops, extensionOps(exts)...)
	ops = append(ops, p.cp, p.node)
	// The index items of the errors and interrupts extended, with their
	// new expiry; nothing after the checkpoint has a condition.
	for _, w := range p.writes {
		if e, ok := p.exts[getS(w, attrSK)]; ok {
			f, err := flagOp(w, e.to)
			if err != nil {
				return nil, err
			}
			if f != nil {
				ops = append(ops, *f)
			}
		}
	}
	return ops, nil
}

// lifetimesOp returns the update of the entries of the blobs extended, nil
// when there is none.
func (p *expiryPlan) lifetimesOp() *awsx.WriteOp {
	u := awsx.NewExpr("u")
	var sets []string
	for _, sk := range p.sks {
		if e, ok := p.entries[sk]; ok {
			sets = append(sets, u.Name(entryPrefix+e.channel)+" = "+u.Value(entryValue(e, p.exp)))
		}
	}
	if !p.keepLifetimes || len(sets) == 0 {
		return nil
	}
	c := awsx.NewExpr("l")
	c.Text = "attribute_exists(" + c.Name(attrPK) + ")"
	u.Text = "SET " + strings.Join(sets, ", ")
	return &awsx.WriteOp{Item: p.lkey, Set: u, Cond: c}
}

// revise takes what the last request failed on: the checkpoint gone or
// expired (ENOTFOUND), the lifetimes item gone, or items extended or
// changed since they were read, which are checked again.
func (p *expiryPlan) revise(ctx context.Context, failed map[int]item) error {
	for i, old := range failed {
		switch {
		case i == p.first+len(p.sks):
			return saver.CheckpointNotFound(p.ref)
		case i < p.first:
			p.keepLifetimes = false
		default:
			sk := p.sks[i-p.first]
			prev := p.exts[sk]
			st, err := p.x.check(ctx, prev.key, prev.channel, prev.version, old, prev)
			if err != nil {
				return err
			}
			if st.ext == nil {
				delete(p.exts, sk)
				continue
			}
			p.exts[sk] = st.ext
		}
	}
	return nil
}
