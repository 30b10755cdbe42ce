package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
// conditioned on its not having expired; a single UpdateItem when only the
// checkpoint changes. Offloaded payloads are retagged before their items
// are extended.
//
// Returns ENOTFOUND if the checkpoint does not exist or has expired.
func (s *Store) SetExpiry(ctx context.Context, ref saver.CheckpointRef, expiresAt int64) error {
	if err := s.setExpiry(ctx, ref, expiresAt); err != nil {
		return fmt.Errorf("dynamo: set expiry of checkpoint %s: %w", ref.ID, err)
	}
	return nil
}

func (s *Store) setExpiry(ctx context.Context, ref saver.CheckpointRef, exp int64) error {
	now := s.Now()
	pk := partitionKey(ref.Tenant, ref.ThreadID)
	cpKey := item{attrPK: attrS(pk), attrSK: attrS(checkpointKey(ref.NS, ref.ID))}
	notFound := saver.Errorf(saver.ENOTFOUND, "Checkpoint %s not found.", ref.ID)

	proj := awsx.NewExpr("p")
	proj.Text = strings.Join([]string{
		proj.Name(attrPK), proj.Name(attrSK), proj.Name(attrKind), proj.Name(attrExpiresAt), proj.Name(attrVersions),
		proj.Path(attrBody, payloadRef), proj.Path(attrValue, payloadRef),
	}, ", ")
	var (
		cp    item
		items []item // the writes, then the blobs
	)
	err := s.table.Query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: item{":pk": cpKey[attrPK], ":sk": cpKey[attrSK]},
		ExpressionAttributeNames:  proj.Names,
		ProjectionExpression:      &proj.Text,
	}, func(page []item) bool {
		for _, it := range page {
			switch getS(it, attrKind) {
			case itemCheckpoint:
				cp = it
			case itemWrite:
				items = append(items, it)
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if cp == nil || s.expired(getN(cp, attrExpiresAt)) {
		return notFound
	}
	var keys []item
	lkey := lifetimesKey(pk, ref.NS)
	bproj := awsx.NewExpr("p")
	fields := []string{bproj.Name(attrPK), bproj.Name(attrSK), bproj.Name(attrExpiresAt), bproj.Name(attrChannel), bproj.Name(attrVersion), bproj.Path(attrValue, payloadRef), bproj.Name(attrChain)}
	if m, ok := cp[attrVersions].(*types.AttributeValueMemberM); ok {
		for ch, v := range m.Value {
			if v, ok := v.(*types.AttributeValueMemberS); ok {
				keys = append(keys, item{attrPK: attrS(pk), attrSK: attrS(blobKey(ref.NS, ch, v.Value))})
				fields = append(fields, bproj.Name(entryPrefix+ch))
			}
		}
	}
	bproj.Text = strings.Join(fields, ", ")
	found, err := s.table.BatchGet(ctx, append(keys, lkey), bproj)
	if err != nil {
		return err
	}
	var lifetimes item
	for _, it := range found {
		if getS(it, attrSK) == getS(lkey, attrSK) {
			lifetimes = it
		} else {
			items = append(items, it)
		}
	}

	// extend returns the expiry to give an item stored with old, if any.
	extend := func(old item) (from int64, ok bool) {
		from, expires := expiryOf(old)
		if old == nil || !expires || s.expired(from) || (exp != 0 && from >= exp) {
			return 0, false
		}
		return from, true
	}
	plan := map[string]int64{}      // sort key -> expiry the item is extended from
	extKeys := map[string]item{}    // sort key -> primary key
	wholes := map[string]item{}     // sort key -> whole value of a patch, written in its place
	entries := map[string]blobRef{} // sort key -> lifetimes entry of a blob extended
	for _, it := range items {
		from, ok := extend(it)
		if !ok {
			continue
		}
		for _, ref := range refs(it) {
			if err := s.retag(ctx, ref, exp); err != nil {
				return err
			}
		}
		sk := getS(it, attrSK)
		plan[sk], extKeys[sk] = from, keyOf(it)
		if chainOf(it) != nil {
			// A patch is never extended: its chain would not be.
			whole, err := s.wholeItem(ctx, ref, getS(it, attrChannel), getS(it, attrVersion), exp)
			if err != nil {
				return err
			}
			wholes[sk] = whole
			it = whole
		}
		if ch, v := getS(it, attrChannel), getS(it, attrVersion); lifetimes != nil && getS(it, attrKind) != itemWrite && ch != "" {
			if e, ok := entry(lifetimes, ch); !ok || e.version == v {
				entries[sk] = blobRef{channel: ch, version: v, ref: valueRef(it)}
			}
		}
	}
	for _, ref := range refs(cp) {
		if err := s.retag(ctx, ref, exp); err != nil {
			return err
		}
	}
	c := awsx.NewExpr("c")
	c.Text = fmt.Sprintf("attribute_exists(%s) AND (attribute_not_exists(%s) OR %s > %s)",
		c.Name(attrPK), c.Name(attrExpiresAt), c.Name(attrExpiresAt), c.Value(attrN(now.Unix())))
	cpOp := awsx.WriteOp{Item: cpKey, Set: expirySet(exp), Cond: c}
	// The entries of the blobs extended say so, where the lifetimes item
	// has them at the same version (or not at all), so that the next puts
	// need not find out. Built each round: only blobs still extended get
	// one, so that no entry vouches for a blob that turned out gone.
	keepLifetimes := true
	lifetimesOp := func(sks []string) *awsx.WriteOp {
		u := awsx.NewExpr("u")
		var sets []string
		for _, sk := range sks {
			if e, ok := entries[sk]; ok {
				sets = append(sets, u.Name(entryPrefix+e.channel)+" = "+u.Value(entryValue(e, exp)))
			}
		}
		if !keepLifetimes || len(sets) == 0 {
			return nil
		}
		lc := awsx.NewExpr("l")
		lc.Text = "attribute_exists(" + lc.Name(attrPK) + ")"
		u.Text = "SET " + strings.Join(sets, ", ")
		return &awsx.WriteOp{Item: lkey, Set: u, Cond: lc}
	}

	for round := 1; ; round++ {
		sks := make([]string, 0, len(plan))
		for sk := range plan {
			sks = append(sks, sk)
		}
		slices.Sort(sks)
		var ops []awsx.WriteOp
		if op := lifetimesOp(sks); op != nil {
			ops = append(ops, *op)
		}
		first := len(ops) // index of the first extension
		for _, sk := range sks {
			if whole := wholes[sk]; whole != nil {
				ops = append(ops, awsx.WriteOp{Item: whole, Cond: expiresAt(plan[sk])})
				continue
			}
			ops = append(ops, extendOp(extKeys[sk], plan[sk], exp))
		}
		ops = append(ops, cpOp)
		err := s.table.Transact(ctx, ops)
		var cf *awsx.CondFailed
		if !errors.As(err, &cf) {
			return err
		}
		if round == maxPutRounds {
			return fmt.Errorf("%w: %w", saver.Errorf(saver.EUNAVAILABLE, "The checkpoint's items kept changing; retry."), err)
		}
		for i, old := range cf.Items {
			switch {
			case i == len(ops)-1:
				return notFound
			case i < first:
				keepLifetimes = false // gone: nothing to keep in step
			default:
				sk := sks[i-first]
				if from, ok := extend(old); ok {
					plan[sk] = from
				} else {
					delete(plan, sk)
				}
			}
		}
	}
}
