package dynamo

import (
	"fmt"
	"time"

	"github.com/saver-dev/saver/internal/awsx"
)

// absentOrExpired is the condition of an insert-if-absent at now: an item
// that expired is absent, whether or not DynamoDB has deleted it yet, so the
// insert replaces it.
func absentOrExpired(now time.Time) *awsx.Expr {
	c := awsx.NewExpr("c")
	c.Text = fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", c.Name(attrPK), c.Name(attrExpiresAt), c.Value(attrN(now.Unix())))
	return c
}

// keyOf returns the primary key of an item.
func keyOf(it item) item { return item{attrPK: it[attrPK], attrSK: it[attrSK]} }

func ptr[T any](v T) *T { return &v }

// expiresAt is the condition that an item expires at exp.
func expiresAt(exp int64) *awsx.Expr {
	c := awsx.NewExpr("c")
	c.Text = c.Name(attrExpiresAt) + " = " + c.Value(attrN(exp))
	return c
}

// expirySet returns the update that sets an item's expiry (0: never).
func expirySet(exp int64) *awsx.Expr {
	u := awsx.NewExpr("u")
	if exp == 0 {
		u.Text = "REMOVE " + u.Name(attrExpiresAt)
	} else {
		u.Text = "SET " + u.Name(attrExpiresAt) + " = " + u.Value(attrN(exp))
	}
	return u
}
