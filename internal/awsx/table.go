// Package awsx holds the AWS SDK mechanics the dynamo and s3offload stores
// share, which know nothing of checkpoints: a DynamoDB table's requests
// (expressions, conditional writes sent in as few requests as DynamoDB's
// limits allow, batches re-sending what was left unprocessed, strongly
// consistent paging), the retry policy of both clients, the translation of
// SDK errors into saver codes, and request counting.
package awsx

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

// DB is the part of the DynamoDB client a Table uses. *dynamodb.Client
// implements it.
type DB interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// DynamoDB's per-request limits, capped here because the emulators do not
// all enforce them (moto accepts a 26-item BatchWriteItem).
const (
	MaxTransactItems = 100     // TransactWriteItems actions
	MaxTransactBytes = 4 << 20 // aggregate item size of one transaction
	MaxBatchWrite    = 25      // BatchWriteItem requests
	MaxBatchGet      = 100     // BatchGetItem keys
)

// maxUnprocessedTries bounds the rounds spent re-sending the items or keys a
// batch call left unprocessed (DynamoDB does that under throttling instead
// of failing the call) before the table gives up with EUNAVAILABLE.
const maxUnprocessedTries = 8

// Table sends requests to one DynamoDB table, every error translated by
// DynamoError. Its methods are safe for concurrent use.
type Table struct {
	DB   DB
	Name string
	// Pause waits before re-sending unprocessed batch items: Backoff (tests
	// make it instant).
	Pause func(ctx context.Context, try int) error
}

// NewTable returns the table name on db.
func NewTable(db DB, name string) *Table { return &Table{DB: db, Name: name, Pause: Backoff} }

// WriteOp is one action of a write request: a put (upsert) of Item; with
// Set, an update of the item at Item (which then holds only the key) by
// that expression; with Delete, the deletion of the item at Item (its key);
// with Check, no write at all: a ConditionCheck of Cond on the item at Item
// (its key), which goes only in a transaction, in the request of the op
// after it (see Chunks).
//
// Cond, when set, must hold on the stored item for the action to apply.
// When it does not, the request the op went in fails as a whole and
// Transact reports the op with the item as stored (see CondFailed).
//
// Glue keeps the op in one request with the op after it (an item and its
// index entry, which must be written together), as a check is.
type WriteOp struct {
	Item   Item
	Set    *Expr
	Delete bool
	Check  bool
	Cond   *Expr
	Glue   bool
}

// CondFailed reports the ops whose condition did not hold, by index in the
// ops given to Transact, with the item as stored (nil when there is none).
// The request holding them wrote nothing; requests before it were applied.
type CondFailed struct {
	Items map[int]Item
}

func (e *CondFailed) Error() string {
	return fmt.Sprintf("dynamo: the condition on %d items did not hold", len(e.Items))
}

// Transact writes ops in order, as few requests as the limits allow: one
// TransactWriteItems per chunk of up to 100 items and 4 MB (Chunks), or a
// single PutItem/UpdateItem for a chunk of one (half the write units of a
// transaction). Chunks run one after the other, so what comes last in ops
// is written only after everything before it. When conditions fail the
// error is a *CondFailed.
func (t *Table) Transact(ctx context.Context, ops []WriteOp) error {
	start := 0
	for _, chunk := range Chunks(ops) {
		if err := t.transactChunk(ctx, chunk); err != nil {
			var cf *CondFailed
			if errors.As(err, &cf) {
				shifted := make(map[int]Item, len(cf.Items))
				for i, it := range cf.Items {
					shifted[start+i] = it
				}
				cf.Items = shifted
			}
			return err
		}
		start += len(chunk)
	}
	return nil
}

func (t *Table) transactChunk(ctx context.Context, ops []WriteOp) error {
	if len(ops) == 1 {
		return t.writeOne(ctx, ops[0])
	}
	items := make([]types.TransactWriteItem, len(ops))
	for i, op := range ops {
		items[i] = t.transactItem(op)
	}
	_, err := t.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		if cf := failedConditions(tc); cf != nil {
			return cf
		}
	}
	return DynamoError(err)
}

// writeOne sends one op as a PutItem, UpdateItem or DeleteItem.
func (t *Table) writeOne(ctx context.Context, op WriteOp) error {
	if op.Check {
		return fmt.Errorf("dynamo: a condition check without a write; it goes with other ops")
	}
	var (
		cond   *string
		failed = types.ReturnValuesOnConditionCheckFailureNone
		err    error
	)
	if op.Cond != nil {
		cond, failed = &op.Cond.Text, types.ReturnValuesOnConditionCheckFailureAllOld
	}
	switch {
	case op.Delete:
		names, values := Merge(op.Cond)
		_, err = t.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: &t.Name, Key: op.Item, ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: failed,
		})
	case op.Set == nil:
		names, values := Merge(op.Cond)
		_, err = t.DB.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &t.Name, Item: op.Item, ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: failed,
		})
	default:
		u := t.update(op)
		_, err = t.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &t.Name,
			Key:                                 u.Key,
			UpdateExpression:                    u.UpdateExpression,
			ConditionExpression:                 u.ConditionExpression,
			ExpressionAttributeNames:            u.ExpressionAttributeNames,
			ExpressionAttributeValues:           u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: failed,
		})
	}
	var ccf *types.ConditionalCheckFailedException
	if op.Cond != nil && errors.As(err, &ccf) {
		return &CondFailed{Items: map[int]Item{0: nilIfEmpty(ccf.Item)}}
	}
	return DynamoError(err)
}

// transactItem returns op as an action of a transaction.
func (t *Table) transactItem(op WriteOp) types.TransactWriteItem {
	if op.Check {
		c := &types.ConditionCheck{TableName: &t.Name, Key: op.Item, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		if op.Cond != nil {
			c.ConditionExpression = &op.Cond.Text
			c.ExpressionAttributeNames, c.ExpressionAttributeValues = Merge(op.Cond)
		}
		return types.TransactWriteItem{ConditionCheck: c}
	}
	if op.Delete {
		d := &types.Delete{TableName: &t.Name, Key: op.Item}
		if op.Cond != nil {
			d.ConditionExpression = &op.Cond.Text
			d.ExpressionAttributeNames, d.ExpressionAttributeValues = Merge(op.Cond)
			d.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		}
		return types.TransactWriteItem{Delete: d}
	}
	if op.Set != nil {
		u := t.update(op)
		if op.Cond != nil {
			u.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		}
		return types.TransactWriteItem{Update: u}
	}
	p := &types.Put{TableName: &t.Name, Item: op.Item}
	if op.Cond != nil {
		p.ConditionExpression = &op.Cond.Text
		p.ExpressionAttributeNames, p.ExpressionAttributeValues = Merge(op.Cond)
		p.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	return types.TransactWriteItem{Put: p}
}

// update returns the update of a set op, with its condition.
func (t *Table) update(op WriteOp) *types.Update {
	u := &types.Update{TableName: &t.Name, Key: op.Item, UpdateExpression: &op.Set.Text}
	if op.Cond != nil {
		u.ConditionExpression = &op.Cond.Text
	}
	u.ExpressionAttributeNames, u.ExpressionAttributeValues = Merge(op.Set, op.Cond)
	return u
}

// failedConditions returns the ops of a cancelled transaction whose
// condition failed, or nil when anything else cancelled it (contention,
// throttling, validation), which DynamoError classifies.
func failedConditions(tc *types.TransactionCanceledException) *CondFailed {
	cf := &CondFailed{Items: map[int]Item{}}
	for i, r := range tc.CancellationReasons {
		switch deref(r.Code) {
		case "", "None":
		case "ConditionalCheckFailed":
			cf.Items[i] = nilIfEmpty(r.Item)
		default:
			return nil
		}
	}
	if len(cf.Items) == 0 {
		return nil
	}
	return cf
}

// Chunks splits ops, in order, into the requests Transact sends: chunks of
// at most MaxTransactItems items and MaxTransactBytes estimated bytes, a run
// of glued ops and checks (WriteOp.Glue, WriteOp.Check) never split from
// the op after it, even when that op starts a new chunk. An item over the
// byte limit alone gets its own chunk (DynamoDB will refuse it with a
// clear error).
func Chunks(ops []WriteOp) [][]WriteOp {
	var (
		chunks [][]WriteOp
		cur    []WriteOp
		size   int
	)
	for i := 0; i < len(ops); {
		j, n := i+1, ItemSize(ops[i].Item)
		for ; j < len(ops) && (ops[j-1].Glue || ops[j-1].Check); j++ {
			n += ItemSize(ops[j].Item)
		}
		if len(cur) > 0 && (len(cur)+j-i > MaxTransactItems || size+n > MaxTransactBytes) {
			chunks = append(chunks, cur)
			cur, size = nil, 0
		}
		cur = append(cur, ops[i:j]...)
		size += n
		i = j
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	return chunks
}

// BatchWrite sends puts and deletes with BatchWriteItem, 25 per request in
// order, re-sending what DynamoDB leaves unprocessed. Use it only where
// neither conditions nor atomicity are needed (deletes, copies).
func (t *Table) BatchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for start := 0; start < len(reqs); start += MaxBatchWrite {
		pending := map[string][]types.WriteRequest{t.Name: reqs[start:min(start+MaxBatchWrite, len(reqs))]}
		for try := 0; len(pending[t.Name]) > 0; try++ {
			if err := t.pause(ctx, try, len(pending[t.Name]), "writes"); err != nil {
				return err
			}
			out, err := t.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return DynamoError(err)
			}
			pending = out.UnprocessedItems
		}
	}
	return nil
}

// BatchGet reads items by key with strongly consistent BatchGetItem calls,
// 100 keys per request, re-asking for what DynamoDB leaves unprocessed.
// Missing items are simply absent from the result. keys must be distinct.
// A projection, when given, limits the attributes read.
func (t *Table) BatchGet(ctx context.Context, keys []Item, projection ...*Expr) ([]Item, error) {
	var out []Item
	for start := 0; start < len(keys); start += MaxBatchGet {
		ka := types.KeysAndAttributes{Keys: keys[start:min(start+MaxBatchGet, len(keys))], ConsistentRead: ptr(true)}
		for _, p := range projection {
			ka.ProjectionExpression, ka.ExpressionAttributeNames = &p.Text, p.Names
		}
		pending := map[string]types.KeysAndAttributes{t.Name: ka}
		for try := 0; len(pending[t.Name].Keys) > 0; try++ {
			if err := t.pause(ctx, try, len(pending[t.Name].Keys), "reads"); err != nil {
				return nil, err
			}
			res, err := t.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, DynamoError(err)
			}
			out = append(out, res.Responses[t.Name]...)
			pending = res.UnprocessedKeys
		}
	}
	return out, nil
}

// pause waits before the try-th send of a batch's unprocessed part (n
// writes or reads left), and gives up with EUNAVAILABLE after
// maxUnprocessedTries.
func (t *Table) pause(ctx context.Context, try, n int, what string) error {
	switch {
	case try == maxUnprocessedTries:
		return saver.Errorf(saver.EUNAVAILABLE, "%s (%d %s left unprocessed)", Unavailable("DynamoDB"), n, what)
	case try > 0:
		return DynamoError(t.Pause(ctx, try))
	}
	return nil
}

// Backoff waits before re-sending unprocessed items: exponential with full
// jitter, as the SDK's retryer does between attempts.
func Backoff(ctx context.Context, try int) error {
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

// Get reads one item by key, strongly consistent; nil when there is none.
func (t *Table) Get(ctx context.Context, key Item) (Item, error) {
	out, err := t.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &t.Name, Key: key, ConsistentRead: ptr(true)})
	if err != nil {
		return nil, DynamoError(err)
	}
	return nilIfEmpty(out.Item), nil
}

// Query calls fn with each page of the query's items, in order, until fn
// returns false or the pages run out. Reads are strongly consistent: a put
// acknowledged by any replica of the service is visible to the next read.
func (t *Table) Query(ctx context.Context, in *dynamodb.QueryInput, fn func(items []Item) bool) error {
	for {
		out, err := t.QueryPage(ctx, in)
		if err != nil {
			return err
		}
		if !fn(out.Items) || len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// QueryPage reads one page of a strongly consistent Query.
func (t *Table) QueryPage(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	in.TableName, in.ConsistentRead = &t.Name, ptr(true)
	out, err := t.DB.Query(ctx, in)
	return out, DynamoError(err)
}

// Scan is Query for a strongly consistent Scan.
func (t *Table) Scan(ctx context.Context, in *dynamodb.ScanInput, fn func(items []Item) bool) error {
	in.TableName, in.ConsistentRead = &t.Name, ptr(true)
	for {
		out, err := t.DB.Scan(ctx, in)
		if err != nil {
			return DynamoError(err)
		}
		if !fn(out.Items) || len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func ptr[T any](v T) *T { return &v }
