package dynamo

import (
	"context"
	"strings"

	"github.com/saver-dev/saver/internal/awsx"
)

// The namespace item. Each namespace of a thread has one small item, named
// the lifetimes item after its first use,
//
//	SK  x!<ns>!     kind "lifetimes"
//
// on which puts keep what a Query cannot tell them and a condition can:
// the lifetimes of the blobs they share (lifetimes.go), the content hashes
// of values a replica remembers (known.go), the bases of patches
// (patched.go) and the head token of conditional puts (head.go). Each is
// a part of the put: it says what it must find on the item as stored, what
// it writes there (and on the checkpoint item, for the hints reads use),
// and how it reacts when DynamoDB cancels the put because the item as
// stored did not meet its condition. A put updates the item in its own
// transaction, all parts' conditions joined, and each part reads the item
// DynamoDB returns with the cancellation.
type nsPart interface {
	// update returns what the part must find on the stored item (the
	// conditions, with c's placeholders) and what it writes there (SET
	// clauses, with u's), and sets what it records on the checkpoint
	// item cp.
	update(c, u *awsx.Expr, cp item) (conds, sets []string)
	// refuted learns from the item as stored (nil: none) when a request
	// failed on its condition.
	refuted(ctx context.Context, stored item) error
}

const (
	kindLifetimes = "x"
	itemLifetimes = "lifetimes"
)

// lifetimesKey is the primary key of a namespace's item.
func lifetimesKey(pk, ns string) item {
	return item{attrPK: attrS(pk), attrSK: attrS(key(kindLifetimes, part(ns, maxNSPart)))}
}

// nsItem is a put's update of its namespace's item.
type nsItem struct {
	pk, ns  string
	exp     int64 // the checkpoint's (0: never)
	itemExp int64 // the item's when the checkpoint expires: its blobs'
	parts   []nsPart
}

// op returns the update of the item, the parts' conditions joined in their
// order and their attributes in the reverse one (the head token before the
// entries), and whether it has any condition. It sets the parts'
// attributes on the checkpoint item cp as well.
func (n *nsItem) op(cp item) (awsx.WriteOp, bool) {
	c, u := awsx.NewExpr("c"), awsx.NewExpr("u")
	var conds []string
	sets := make([][]string, len(n.parts))
	for i, part := range n.parts {
		cs, ss := part.update(c, u, cp)
		conds, sets[i] = append(conds, cs...), ss
	}
	all := []string{u.Name(attrKind) + " = " + u.Value(attrS(itemLifetimes))}
	for i := len(sets) - 1; i >= 0; i-- {
		all = append(all, sets[i]...)
	}
	// The item lives as long as the blobs it brings, or forever. Its own
	// expiry protects nothing: once it is gone, puts read their blobs.
	u.Text = "SET " + strings.Join(all, ", ")
	if n.exp == 0 {
		u.Text += " REMOVE " + u.Name(attrExpiresAt)
	} else {
		u.Text += ", " + u.Name(attrExpiresAt) + " = " + u.Value(attrN(n.itemExp))
	}
	op := awsx.WriteOp{Item: lifetimesKey(n.pk, n.ns), Set: u}
	if len(conds) > 0 {
		c.Text = strings.Join(conds, " AND ")
		op.Cond = c
	}
	return op, len(conds) > 0
}

// refuted has each part, in order, learn from the item as stored.
func (n *nsItem) refuted(ctx context.Context, stored item) error {
	for _, part := range n.parts {
		if err := part.refuted(ctx, stored); err != nil {
			return err
		}
	}
	return nil
}
