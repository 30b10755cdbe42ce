package dynamo

import (
	"context"
	"crypto/rand"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// Conditional puts (saver.PutCheckpoint.ExpectHead). A namespace's head is
// its newest live checkpoint: the answer to a Query, on which DynamoDB
// cannot condition a write. So a conditional put reads the head first, with
// one Query projected on kind, id and expiry, and refuses a moved head
// there, having written nothing. What may change between that read and the
// put's transaction is guarded by a token on the namespace's lifetimes
// item, which the transaction of every conditional put updates:
//
//	head = {i: the namespace's head once the put is stored, n: a nonce}
//
// conditioned on the token being what the put's read implies: absent,
// naming the head read, or the put's own (set by an earlier request of the
// same put). Two writers that read the same head send the same condition;
// the first to commit sets a nonce the second cannot match, so DynamoDB
// cancels the second, which reads the head again, finds it moved and
// returns ECONFLICT.
//
// The token can lag behind the head: a put without a condition leaves it
// alone, and an expired or deleted head does not change it. When the
// condition fails but the second read finds the head where the put
// expected it, the token was stale: the put goes again, conditioned on the
// token's nonce as it failed, which only a conditional put committed since
// changes. Puts without a condition are not ordered against that window:
// one committed between a conditional put's read and its transaction goes
// unseen. Writers of one thread either all send the condition or none does.
const (
	attrHead  = "head"
	headID    = "i"
	headNonce = "n"
)

// headGuard is the head token of a conditional put, a part of its
// namespace item: the condition on the token, revised when a request fails
// on it.
type headGuard struct {
	s                *Store
	pk, threadID, ns string
	expect           string // the head the put expects, "" for none
	head             string // the head once the put is stored: the token's id
	nonce            string // the put's own token
	// reread is set once the condition failed on a stale token; seen is
	// that token's nonce ("" when there was none), the one accepted now.
	reread bool
	seen   string
}

// guardHead reads the head of the put's namespace and returns the guard of
// its transaction, or ECONFLICT if the head is not the one expected.
func (s *Store) guardHead(ctx context.Context, in *saver.PutCheckpoint, pk string) (*headGuard, error) {
	g := &headGuard{s: s, pk: pk, threadID: in.ThreadID, ns: in.NS, expect: *in.ExpectHead, nonce: rand.Text()}
	if err := g.check(ctx); err != nil {
		return nil, err
	}
	g.head = max(in.ID, g.expect) // ids order checkpoints, as GetTuple's latest
	return g, nil
}

// check returns ECONFLICT unless the namespace's head is the one expected.
func (g *headGuard) check(ctx context.Context) error {
	head, err := g.s.head(ctx, g.pk, g.ns)
	if err != nil {
		return err
	}
	if head != g.expect {
		return saver.HeadMoved(g.threadID, g.ns, head, g.expect)
	}
	return nil
}

// update returns the condition on the token and the token the put sets.
func (g *headGuard) update(c, u *awsx.Expr, _ item) (conds, sets []string) {
	return []string{g.cond(c)}, []string{u.Name(attrHead) + " = " + u.Value(g.token())}
}

// refuted handles a request the namespace item failed: when the token did
// not meet the condition, the head is read again (revise).
func (g *headGuard) refuted(ctx context.Context, old item) error {
	if g.accepts(old) {
		return nil // the other parts' conditions failed
	}
	return g.revise(ctx, old)
}

// cond returns the condition on the token, with c's placeholders.
func (g *headGuard) cond(c *awsx.Expr) string {
	nonce := c.Path(attrHead, headNonce) + " = "
	var alts []string
	switch {
	case !g.reread:
		alts = append(alts, "attribute_not_exists("+c.Name(attrHead)+")")
		if g.expect != "" {
			alts = append(alts, c.Path(attrHead, headID)+" = "+c.Value(attrS(g.expect)))
		}
	case g.seen == "":
		alts = append(alts, "attribute_not_exists("+c.Name(attrHead)+")")
	default:
		alts = append(alts, nonce+c.Value(attrS(g.seen)))
	}
	alts = append(alts, nonce+c.Value(attrS(g.nonce)))
	return "(" + strings.Join(alts, " OR ") + ")"
}

// token is the value the put gives the token.
func (g *headGuard) token() types.AttributeValue {
	return &types.AttributeValueMemberM{Value: item{headID: attrS(g.head), headNonce: attrS(g.nonce)}}
}

// accepts reports whether the namespace item as stored (nil: none) meets
// cond: when it does, the other parts failed the request, not the token.
func (g *headGuard) accepts(old item) bool {
	m, ok := old[attrHead].(*types.AttributeValueMemberM)
	if !ok {
		return !g.reread || g.seen == ""
	}
	switch n := getS(m.Value, headNonce); {
	case n == g.nonce:
		return true
	case !g.reread:
		return g.expect != "" && getS(m.Value, headID) == g.expect
	default:
		return g.seen != "" && n == g.seen
	}
}

// revise handles a request that failed on the token, stored as in old: it
// reads the head again and returns ECONFLICT if it moved; otherwise the
// token was stale, and the next request accepts it as it is.
func (g *headGuard) revise(ctx context.Context, old item) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	g.reread, g.seen = true, ""
	if m, ok := old[attrHead].(*types.AttributeValueMemberM); ok {
		g.seen = getS(m.Value, headNonce)
	}
	return nil
}

// head returns the id of the newest live checkpoint of namespace ns, "" if
// there is none: GetTuple's latest, found by a Query backwards from the end
// of the namespace, projected on what tells checkpoints from writes and the
// live from the expired.
func (s *Store) head(ctx context.Context, pk, ns string) (string, error) {
	p := awsx.NewExpr("p")
	p.Text = strings.Join([]string{p.Name(attrKind), p.Name(attrID), p.Name(attrExpiresAt)}, ", ")
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: item{":pk": attrS(pk), ":sk": attrS(nsPrefix(ns))},
		ExpressionAttributeNames:  p.Names,
		ProjectionExpression:      &p.Text,
		ScanIndexForward:          ptr(false),
		Limit:                     ptr(s.FirstPage),
	}
	head := ""
	err := s.table.Query(ctx, in, func(items []item) bool {
		for _, it := range items {
			if getS(it, attrKind) == itemCheckpoint && !s.expired(getN(it, attrExpiresAt)) {
				head = getS(it, attrID)
				return false
			}
		}
		in.Limit = nil // many writes on the newest checkpoints: read on in larger pages
		return true
	})
	return head, err
}
