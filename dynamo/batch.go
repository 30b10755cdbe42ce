package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
)

// DynamoDB's per-request limits, capped here because the emulators do not
// all enforce them (moto accepts a 26-item BatchWriteItem).
const (
	maxTransactItems = 100     // TransactWriteItems actions
	maxTransactBytes = 4 << 20 // aggregate item size of one transaction
	maxBatchWrite    = 25      // BatchWriteItem requests
	maxBatchGet      = 100     // BatchGetItem keys
)

// maxUnprocessedTries bounds the rounds spent re-sending the items or keys a
// batch call left unprocessed (DynamoDB does that under throttling instead
// of failing the call) before the store gives up with EUNAVAILABLE.
const maxUnprocessedTries = 8

// writeOp is one action of a write request: a put (upsert) of item; with
// set, an update of the item at item's key (item then holds only the key) by
// that expression; with check, a check of cond that writes nothing.
//
// cond, when set, must hold on the stored item for the action to apply. When
// it does not, the request the op went in fails as a whole and transact
// reports the op with the item as stored (see condFailed). A put under
// absentOrExpired is an insert-if-absent.
type writeOp struct {
	item  item
	set   *expr
	check bool
	cond  *expr
}

// absentOrExpired is the condition of an insert-if-absent at now: an item
// that expired is absent, whether or not DynamoDB has deleted it yet, so the
// insert replaces it.
func absentOrExpired(now time.Time) *expr {
	c := newExpr("c")
	c.text = fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", c.name(attrPK), c.name(attrExpiresAt), c.value(attrN(now.Unix())))
	return c
}

// condFailed reports the ops whose condition did not hold, by index in the
// ops given to transact, with the item as stored (nil when there is none).
// The request holding them wrote nothing; requests before it were applied.
type condFailed struct {
	items map[int]item
}

func (e *condFailed) Error() string {
	return fmt.Sprintf("dynamo: the condition on %d items did not hold", len(e.items))
}

// transact writes ops in order, as few requests as the limits allow: one
// TransactWriteItems per chunk of up to 100 items and 4 MB, or a single
// PutItem/UpdateItem for a chunk of one (half the write units of a
// transaction). Chunks run one after the other, so what comes last in ops
// (the checkpoint item) is written only after everything before it. When
// conditions fail the error is a *condFailed.
func (s *Store) transact(ctx context.Context, ops []writeOp) error {
	start := 0
	for _, chunk := range chunkOps(ops, maxTransactItems, maxTransactBytes) {
		if err := s.transactChunk(ctx, chunk); err != nil {
			var cf *condFailed
			if errors.As(err, &cf) {
				shifted := make(map[int]item, len(cf.items))
				for i, it := range cf.items {
					shifted[start+i] = it
				}
				cf.items = shifted
			}
			return err
		}
		start += len(chunk)
	}
	return nil
}

func (s *Store) transactChunk(ctx context.Context, ops []writeOp) error {
	if len(ops) == 1 && !ops[0].check {
		return s.writeOne(ctx, ops[0])
	}
	items := make([]types.TransactWriteItem, len(ops))
	for i, op := range ops {
		items[i] = s.transactItem(op)
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		if cf := failedConditions(tc); cf != nil {
			return cf
		}
	}
	return translate(err)
}

// writeOne sends one op as a PutItem or UpdateItem.
func (s *Store) writeOne(ctx context.Context, op writeOp) error {
	var (
		cond   *string
		failed = types.ReturnValuesOnConditionCheckFailureNone
		err    error
	)
	if op.cond != nil {
		cond, failed = &op.cond.text, types.ReturnValuesOnConditionCheckFailureAllOld
	}
	if op.set == nil {
		names, values := merge(op.cond)
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.table, Item: op.item, ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: failed,
		})
	} else {
		u := s.update(op)
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &s.table,
			Key:                                 u.Key,
			UpdateExpression:                    u.UpdateExpression,
			ConditionExpression:                 u.ConditionExpression,
			ExpressionAttributeNames:            u.ExpressionAttributeNames,
			ExpressionAttributeValues:           u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: failed,
		})
	}
	var ccf *types.ConditionalCheckFailedException
	if op.cond != nil && errors.As(err, &ccf) {
		return &condFailed{items: map[int]item{0: nilIfEmpty(ccf.Item)}}
	}
	return translate(err)
}

// transactItem returns op as an action of a transaction.
func (s *Store) transactItem(op writeOp) types.TransactWriteItem {
	all := types.ReturnValuesOnConditionCheckFailureAllOld
	switch {
	case op.check:
		names, values := merge(op.cond)
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: &s.table, Key: keyOf(op.item), ConditionExpression: &op.cond.text,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: all,
		}}
	case op.set != nil:
		u := s.update(op)
		if op.cond != nil {
			u.ReturnValuesOnConditionCheckFailure = all
		}
		return types.TransactWriteItem{Update: u}
	}
	p := &types.Put{TableName: &s.table, Item: op.item}
	if op.cond != nil {
		p.ConditionExpression = &op.cond.text
		p.ExpressionAttributeNames, p.ExpressionAttributeValues = merge(op.cond)
		p.ReturnValuesOnConditionCheckFailure = all
	}
	return types.TransactWriteItem{Put: p}
}

// update returns the update of a set op, with its condition.
func (s *Store) update(op writeOp) *types.Update {
	u := &types.Update{TableName: &s.table, Key: keyOf(op.item), UpdateExpression: &op.set.text}
	if op.cond != nil {
		u.ConditionExpression = &op.cond.text
	}
	u.ExpressionAttributeNames, u.ExpressionAttributeValues = merge(op.set, op.cond)
	return u
}

// failedConditions returns the ops of a cancelled transaction whose
// condition failed, or nil when anything else cancelled it (contention,
// throttling, validation), which translate classifies.
func failedConditions(tc *types.TransactionCanceledException) *condFailed {
	cf := &condFailed{items: map[int]item{}}
	for i, r := range tc.CancellationReasons {
		switch deref(r.Code) {
		case "", "None":
		case "ConditionalCheckFailed":
			cf.items[i] = nilIfEmpty(r.Item)
		default:
			return nil
		}
	}
	if len(cf.items) == 0 {
		return nil
	}
	return cf
}

func nilIfEmpty(it item) item {
	if len(it) == 0 {
		return nil
	}
	return it
}

// keyOf returns the primary key of an item.
func keyOf(it item) item { return item{attrPK: it[attrPK], attrSK: it[attrSK]} }

// chunkOps splits ops, in order, into chunks of at most maxItems items and
// maxBytes estimated bytes. An item over maxBytes alone gets its own chunk
// (DynamoDB will refuse it with a clear error).
func chunkOps(ops []writeOp, maxItems, maxBytes int) [][]writeOp {
	var (
		chunks [][]writeOp
		cur    []writeOp
		size   int
	)
	for _, op := range ops {
		n := itemSize(op.item)
		if len(cur) > 0 && (len(cur) == maxItems || size+n > maxBytes) {
			chunks = append(chunks, cur)
			cur, size = nil, 0
		}
		cur = append(cur, op)
		size += n
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	return chunks
}

// batchWrite sends puts and deletes with BatchWriteItem, 25 per request in
// order, re-sending what DynamoDB leaves unprocessed. Use it only where
// neither conditions nor atomicity are needed (deletes, copies).
func (s *Store) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for start := 0; start < len(reqs); start += maxBatchWrite {
		pending := map[string][]types.WriteRequest{s.table: reqs[start:min(start+maxBatchWrite, len(reqs))]}
		for try := 0; len(pending[s.table]) > 0; try++ {
			if try == maxUnprocessedTries {
				return saver.Errorf(saver.EUNAVAILABLE, "%s (%d writes left unprocessed)", msgUnavailable, len(pending[s.table]))
			}
			if try > 0 {
				if err := s.pause(ctx, try); err != nil {
					return translate(err)
				}
			}
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return translate(err)
			}
			pending = out.UnprocessedItems
		}
	}
	return nil
}

// batchGet reads items by key with strongly consistent BatchGetItem calls,
// 100 keys per request, re-asking for what DynamoDB leaves unprocessed.
// Missing items are simply absent from the result. keys must be distinct.
// A projection, when given, limits the attributes read.
func (s *Store) batchGet(ctx context.Context, keys []item, projection ...*expr) ([]item, error) {
	var out []item
	for start := 0; start < len(keys); start += maxBatchGet {
		ka := types.KeysAndAttributes{Keys: keys[start:min(start+maxBatchGet, len(keys))], ConsistentRead: ptr(true)}
		for _, p := range projection {
			ka.ProjectionExpression, ka.ExpressionAttributeNames = &p.text, p.names
		}
		pending := map[string]types.KeysAndAttributes{s.table: ka}
		for try := 0; len(pending[s.table].Keys) > 0; try++ {
			if try == maxUnprocessedTries {
				return nil, saver.Errorf(saver.EUNAVAILABLE, "%s (%d reads left unprocessed)", msgUnavailable, len(pending[s.table].Keys))
			}
			if try > 0 {
				if err := s.pause(ctx, try); err != nil {
					return nil, translate(err)
				}
			}
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, translate(err)
			}
			out = append(out, res.Responses[s.table]...)
			pending = res.UnprocessedKeys
		}
	}
	return out, nil
}

// backoff waits before re-sending unprocessed items: exponential with full
// jitter, as the SDK's retryer does between attempts.
func backoff(ctx context.Context, try int) error {
	ceiling := min(MaxBackoff, 50*time.Millisecond<<min(try, 10))
	t := time.NewTimer(rand.N(ceiling) + time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// query calls fn with each page of the query's items, in order, until fn
// returns false or the pages run out. Reads are strongly consistent: a put
// acknowledged by any replica of the service is visible to the next read.
func (s *Store) query(ctx context.Context, in *dynamodb.QueryInput, fn func(items []item) bool) error {
	in.TableName = &s.table
	in.ConsistentRead = ptr(true)
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return translate(err)
		}
		if !fn(out.Items) || len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// scan is query for a strongly consistent Scan.
func (s *Store) scan(ctx context.Context, in *dynamodb.ScanInput, fn func(items []item) bool) error {
	in.TableName = &s.table
	in.ConsistentRead = ptr(true)
	for {
		out, err := s.db.Scan(ctx, in)
		if err != nil {
			return translate(err)
		}
		if !fn(out.Items) || len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func ptr[T any](v T) *T { return &v }
