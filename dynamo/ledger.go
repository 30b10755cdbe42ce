package dynamo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

var _ saver.Ledger = (*Store)(nil)

// Ledger records live in the store's table, one item per key in a partition
// of its own:
//
//	PK  <tenant>!~ledger!<key>!
//	SK  l!
//
// A thread's partition key has two parts and a ledger key's three, and no
// part holds the separator, so no thread id can name a ledger partition and
// thread operations (which work by partition) never touch the ledger.
//
// Attributes: kind ("ledger"), state, token, attempt, lease_expires_ms (the
// holder's lease, epoch milliseconds, while claimed), ttl_s (the claim's TTL
// in seconds), expires_at (the record's expiry, epoch seconds: the table's
// TTL attribute), result ({type, data}, completed) and error ({message,
// retryable}, failed, and kept across a retry so the next holder sees it).
//
// Record expiry has DynamoDB TTL's resolution: a record expires TTL after its
// last change rounded up to the second, and is hidden from then on whether
// or not DynamoDB has deleted it yet.
const (
	ledgerPart = "~ledger"
	kindLedger = "l"

	attrState     = "state"
	attrToken     = "token"
	attrClaimID   = "claim_id"
	attrAttempt   = "attempt"
	attrLease     = "lease_expires_ms"
	attrTTL       = "ttl_s"
	attrResult    = "result"
	attrError     = "error"
	errorMessage  = "message"
	errorRetry    = "retryable"
	maxLedgerPart = 900 // keeps the partition key under DynamoDB's 2,048 bytes
)

// MaxResultBytes bounds a completed key's result (type and data). Results
// stay inline in the ledger item, so that a claim that finds its key
// completed costs one request and the ledger needs no offloaded objects of
// its own (those are per thread); a result is what a side effect returned (a
// charge id, a receipt), far below the limit, which leaves room under
// DynamoDB's 400 KB item limit for the rest of the record. Complete refuses a
// larger result with ETOOLARGE.
const MaxResultBytes = 384 << 10

// maxClaimRounds bounds the conditional writes of one claim. Each round
// starts from the record the last one failed on, so more than two happen
// only when other callers keep changing the key.
const maxClaimRounds = 4

// ledgerKey is the primary key of an idempotency key's record.
func ledgerKey(tenant, idemKey string) item {
	return item{
		attrPK: attrS(tenantPrefix(tenant) + key(ledgerPart, part(idemKey, maxLedgerPart))),
		attrSK: attrS(key(kindLedger)),
	}
}

// record is a ledger item decoded.
type record struct {
	state   saver.ClaimState
	token   string
	claimID string // the granted claim's, to know its resends
	attempt int
	lease   int64 // epoch milliseconds; 0 when not claimed
	expires int64 // epoch seconds
	result  *saver.Typed
	err     *saver.ClaimError
}

func decodeRecord(it item) (*record, error) {
	if it == nil {
		return nil, nil
	}
	r := &record{
		state:   saver.ClaimState(getS(it, attrState)),
		token:   getS(it, attrToken),
		claimID: getS(it, attrClaimID),
		attempt: int(getN(it, attrAttempt)),
		lease:   getN(it, attrLease),
		expires: getN(it, attrExpiresAt),
	}
	if av, ok := it[attrResult]; ok {
		var l loads
		r.result = &saver.Typed{}
		if err := l.payload(av, r.result); err != nil {
			return nil, fmt.Errorf("ledger result: %w", err)
		}
		if len(l.refs) > 0 {
			return nil, fmt.Errorf("ledger result is offloaded")
		}
	}
	if m, ok := it[attrError].(*types.AttributeValueMemberM); ok {
		r.err = &saver.ClaimError{Message: getS(m.Value, errorMessage)}
		if b, ok := m.Value[errorRetry].(*types.AttributeValueMemberBOOL); ok {
			r.err.Retryable = b.Value
		}
	}
	return r, nil
}

// outcome is the record's state with its result or error.
func (r *record) outcome() saver.Outcome {
	return saver.Outcome{State: r.state, Result: r.result, Error: r.err}
}

// claimRecord is the record as the root's claim rules read it.
func (r *record) claimRecord() *saver.ClaimRecord {
	return &saver.ClaimRecord{State: r.state, Token: r.token, ClaimID: r.claimID, Attempt: r.attempt, LeaseExpiresAt: time.UnixMilli(r.lease).UTC(), Outcome: r.outcome()}
}

// Ledger times. A lease is kept in milliseconds (leases may be short); a
// record's expiry in the epoch seconds DynamoDB TTL takes, rounded up so a
// record never lives less than its TTL.
func millis(t time.Time) int64 { return t.UnixMilli() }

func ceilSeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func ttlSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Claim claims a key with one conditional UpdateItem, which grants the lease
// when the key is new, its lease ran out or its last failure was retryable,
// and takes the next attempt number and any stored failure along. When the
// condition fails, DynamoDB returns the record it failed on
// (ReturnValuesOnConditionCheckFailure), which the answer is read from, so
// reporting the key's state costs no second request. A record that expired
// but that DynamoDB has not deleted yet is replaced by a conditional PutItem
// that starts the key afresh: two requests.
//
// DynamoDB applies conditional writes to an item one at a time, so of any
// number of concurrent claims exactly one finds the key free.
func (s *Store) Claim(ctx context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
	now := s.Now()
	token := rand.Text()
	fresh := false
	for range maxClaimRounds {
		claim, try := s.claimTake, "take over"
		if fresh {
			claim, try = s.claimFresh, "start afresh"
		}
		c, old, err := claim(ctx, in, now, token)
		if err != nil {
			return nil, fmt.Errorf("dynamo: claim %q (%s): %w", in.Key, try, err)
		}
		if c != nil {
			return c, nil
		}
		// The condition failed on old: report it, or try again the way it
		// can be granted.
		switch {
		case old == nil:
			fresh = false
		case saver.Expired(old.expires, now):
			fresh = true
		default:
			if c := old.claimRecord().Answer(in.Key, in.ClaimID, now); c != nil {
				return c, nil
			}
			fresh = false
		}
	}
	return nil, fmt.Errorf("dynamo: claim %q: %w", in.Key, saver.Errorf(saver.EUNAVAILABLE, "The key kept changing under the claim; retry."))
}

// claimTake grants the lease on a new key, or takes it over from an expired
// lease or a retryable failure, in one UpdateItem. It returns the claim when
// granted, else the record the condition failed on.
func (s *Store) claimTake(ctx context.Context, in saver.ClaimRequest, now time.Time, token string) (*saver.Claim, *record, error) {
	lease := millis(now.Add(in.Lease))
	ttl := ttlSeconds(in.TTL)
	c, u := awsx.NewExpr("c"), awsx.NewExpr("u")
	c.Text = fmt.Sprintf("attribute_not_exists(%s) OR (%s > %s AND ((%s = %s AND %s <= %s) OR (%s = %s AND %s = %s)))",
		c.Name(attrPK), c.Name(attrExpiresAt), c.Value(attrN(now.Unix())),
		c.Name(attrState), c.Value(attrS(string(saver.ClaimClaimed))), c.Name(attrLease), c.Value(attrN(millis(now))),
		c.Name(attrState), c.Value(attrS(string(saver.ClaimFailed))), c.Path(attrError, errorRetry), c.Value(&types.AttributeValueMemberBOOL{Value: true}))
	u.Text = fmt.Sprintf("SET %s = %s, %s = %s, %s = %s, %s = if_not_exists(%s, %s) + %s, %s = %s, %s = %s, %s = %s REMOVE %s",
		u.Name(attrKind), u.Value(attrS(itemLedger)),
		u.Name(attrState), u.Value(attrS(string(saver.ClaimClaimed))),
		u.Name(attrToken), u.Value(attrS(token)),
		u.Name(attrAttempt), u.Name(attrAttempt), u.Value(attrN(0)), u.Value(attrN(1)),
		u.Name(attrLease), u.Value(attrN(lease)),
		u.Name(attrTTL), u.Value(attrN(ttl)),
		u.Name(attrExpiresAt), u.Value(attrN(ceilSeconds(now)+ttl)),
		u.Name(attrResult))
	if in.ClaimID != "" {
		u.Text = strings.Replace(u.Text, " REMOVE ", ", "+u.Name(attrClaimID)+" = "+u.Value(attrS(in.ClaimID))+" REMOVE ", 1)
	} else {
		u.Text += ", " + u.Name(attrClaimID)
	}
	names, values := awsx.Merge(c, u)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &s.table.Name,
		Key:                                 ledgerKey(in.Tenant, in.Key),
		ConditionExpression:                 &c.Text,
		UpdateExpression:                    &u.Text,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok, err := conditionOld(err); ok {
		return nil, old, err
	}
	if err != nil {
		return nil, nil, awsx.DynamoError(err)
	}
	rec, err := decodeRecord(out.Attributes)
	if err != nil {
		return nil, nil, err
	}
	return granted(in.Key, token, lease, rec.attempt, rec.err), nil, nil
}

// claimFresh replaces an expired record with a new one, attempt 1, in one
// conditional PutItem. It returns the claim when granted, else the record
// the condition failed on (another caller's fresh claim, most likely).
func (s *Store) claimFresh(ctx context.Context, in saver.ClaimRequest, now time.Time, token string) (*saver.Claim, *record, error) {
	lease := millis(now.Add(in.Lease))
	ttl := ttlSeconds(in.TTL)
	it := ledgerKey(in.Tenant, in.Key)
	it[attrKind] = attrS(itemLedger)
	it[attrState] = attrS(string(saver.ClaimClaimed))
	it[attrToken] = attrS(token)
	if in.ClaimID != "" {
		it[attrClaimID] = attrS(in.ClaimID)
	}
	it[attrAttempt] = attrN(1)
	it[attrLease] = attrN(lease)
	it[attrTTL] = attrN(ttl)
	it[attrExpiresAt] = attrN(ceilSeconds(now) + ttl)
	c := absentOrExpired(now)
	names, values := awsx.Merge(c)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           &s.table.Name,
		Item:                                it,
		ConditionExpression:                 &c.Text,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok, err := conditionOld(err); ok {
		return nil, old, err
	}
	if err != nil {
		return nil, nil, awsx.DynamoError(err)
	}
	return granted(in.Key, token, lease, 1, nil), nil, nil
}

func granted(key, token string, lease int64, attempt int, prev *saver.ClaimError) *saver.Claim {
	return &saver.Claim{
		Key:            key,
		State:          saver.ClaimClaimed,
		Token:          token,
		LeaseExpiresAt: time.UnixMilli(lease).UTC(),
		Attempt:        attempt,
		Error:          prev,
	}
}

// conditionOld returns, when err is a failed condition, the record DynamoDB
// returned with it (nil if there was no item) and ok.
func conditionOld(err error) (old *record, ok bool, _ error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false, nil
	}
	if len(ccf.Item) == 0 {
		return nil, true, nil // no record
	}
	old, err = decodeRecord(ccf.Item)
	return old, true, err
}

// Complete stores the result of the claim that token holds, with one
// conditional UpdateItem; see settle.
func (s *Store) Complete(ctx context.Context, tenant, key, token string, result saver.Typed) error {
	if n := len(result.Type) + len(result.Data); n > MaxResultBytes {
		return saver.Errorf(saver.ETOOLARGE, "A result of %d bytes is over the ledger's limit of %d bytes.", n, MaxResultBytes)
	}
	u := awsx.NewExpr("u")
	u.Text = fmt.Sprintf("SET %s = %s, %s = %s", u.Name(attrState), u.Value(attrS(string(saver.ClaimCompleted))), u.Name(attrResult), u.Value(payloadAttr(result)))
	out := saver.Outcome{State: saver.ClaimCompleted, Result: &result}
	if err := s.settle(ctx, tenant, key, token, u, attrError, out); err != nil {
		return fmt.Errorf("dynamo: complete %q: %w", key, err)
	}
	return nil
}

// Fail stores the failure of the claim that token holds; see settle.
func (s *Store) Fail(ctx context.Context, tenant, key, token string, failure saver.ClaimError) error {
	u := awsx.NewExpr("u")
	u.Text = fmt.Sprintf("SET %s = %s, %s = %s", u.Name(attrState), u.Value(attrS(string(saver.ClaimFailed))), u.Name(attrError), u.Value(&types.AttributeValueMemberM{Value: item{
		errorMessage: attrS(failure.Message),
		errorRetry:   &types.AttributeValueMemberBOOL{Value: failure.Retryable},
	}}))
	out := saver.Outcome{State: saver.ClaimFailed, Error: &failure}
	if err := s.settle(ctx, tenant, key, token, u, attrResult, out); err != nil {
		return fmt.Errorf("dynamo: fail %q: %w", key, err)
	}
	return nil
}

// settle applies an outcome (set, which sets the state and its result or
// error; drop names the other one) to the record that token holds, in one
// UpdateItem conditioned on the token, the claimed state and the record not
// having expired. The record then lives its TTL from now. The holder keeps
// the key after its lease ran out until another caller claims it. When the
// condition fails, the record it failed on says why: unknown or expired
// (ENOTFOUND), another holder (ECONFLICT), or already settled, which is
// accepted when it is the same outcome (out) so that a client can retry a
// call whose answer it lost, and a conflict otherwise.
func (s *Store) settle(ctx context.Context, tenant, key, token string, set *awsx.Expr, drop string, out saver.Outcome) error {
	now := s.Now()
	c := awsx.NewExpr("c")
	c.Text = fmt.Sprintf("%s = %s AND %s = %s AND %s > %s",
		c.Name(attrToken), c.Value(attrS(token)),
		c.Name(attrState), c.Value(attrS(string(saver.ClaimClaimed))),
		c.Name(attrExpiresAt), c.Value(attrN(now.Unix())))
	set.Text += fmt.Sprintf(", %s = %s + %s REMOVE %s, %s",
		set.Name(attrExpiresAt), set.Value(attrN(ceilSeconds(now))), set.Name(attrTTL),
		set.Name(attrLease), set.Name(drop))
	names, values := awsx.Merge(c, set)
	k := ledgerKey(tenant, key)
	if size := awsx.ItemSize(values) + awsx.ItemSize(k); size > MaxItemBytes {
		return saver.Errorf(saver.ETOOLARGE, "A ledger record of %d bytes is over DynamoDB's limit of %d bytes.", size, MaxItemBytes)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &s.table.Name,
		Key:                                 k,
		ConditionExpression:                 &c.Text,
		UpdateExpression:                    &set.Text,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, failed, derr := conditionOld(err)
	switch {
	case !failed:
		return awsx.DynamoError(err)
	case derr != nil:
		return derr
	case old == nil || saver.Expired(old.expires, now):
		return saver.ErrClaimUnknown(key)
	case old.token != token:
		return saver.ErrClaimNotHeld(key)
	case out.Same(old.outcome()):
		return nil
	}
	return saver.ErrClaimSettled(key, old.state)
}
