package dynamo

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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

// writeOp is one item write: an upsert when keep is false; otherwise an
// insert-if-absent that keeps every attribute an existing item already has
// (an Update of if_not_exists for each), which never fails and so can share
// a transaction with other writes without cancelling it.
type writeOp struct {
	item item
	keep bool
}

// transact writes ops in order, as few requests as the limits allow: one
// TransactWriteItems per chunk of up to 100 items and 4 MB, or a single
// PutItem/UpdateItem for a chunk of one (half the write units of a
// transaction). Chunks run one after the other, so what comes last in ops
// (the checkpoint item) is written only after everything before it.
func (s *Store) transact(ctx context.Context, ops []writeOp) error {
	for _, chunk := range chunkOps(ops, maxTransactItems, maxTransactBytes) {
		if err := s.transactChunk(ctx, chunk); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) transactChunk(ctx context.Context, ops []writeOp) error {
	if len(ops) == 1 {
		op := ops[0]
		if !op.keep {
			_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: op.item})
			return translate(err)
		}
		u := updateOf(op.item)
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.table,
			Key:                       u.Key,
			UpdateExpression:          u.UpdateExpression,
			ExpressionAttributeNames:  u.ExpressionAttributeNames,
			ExpressionAttributeValues: u.ExpressionAttributeValues,
		})
		return translate(err)
	}
	items := make([]types.TransactWriteItem, len(ops))
	for i, op := range ops {
		if op.keep {
			u := updateOf(op.item)
			u.TableName = &s.table
			items[i] = types.TransactWriteItem{Update: u}
		} else {
			items[i] = types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: op.item}}
		}
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return translate(err)
}

// updateOf returns the insert-if-absent update of it: every attribute but
// the key and the expiry is set only if the item does not have it yet. The
// expiry is always set, so a re-put refreshes it.
func updateOf(it item) *types.Update {
	u := &types.Update{
		Key:                       item{attrPK: it[attrPK], attrSK: it[attrSK]},
		ExpressionAttributeNames:  map[string]string{},
		ExpressionAttributeValues: map[string]types.AttributeValue{},
	}
	// Sorted names make the expression deterministic, which keeps requests
	// comparable in logs and tests.
	names := make([]string, 0, len(it))
	for name := range it {
		if name != attrPK && name != attrSK {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("SET ")
	for i, name := range names {
		n, v := "#a"+strconv.Itoa(i), ":v"+strconv.Itoa(i)
		u.ExpressionAttributeNames[n] = name
		u.ExpressionAttributeValues[v] = it[name]
		if i > 0 {
			b.WriteString(", ")
		}
		if name == attrExpiresAt {
			b.WriteString(n + " = " + v)
		} else {
			b.WriteString(n + " = if_not_exists(" + n + ", " + v + ")")
		}
	}
	expr := b.String()
	u.UpdateExpression = &expr
	return u
}

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
func (s *Store) batchGet(ctx context.Context, keys []item) ([]item, error) {
	var out []item
	for start := 0; start < len(keys); start += maxBatchGet {
		pending := map[string]types.KeysAndAttributes{s.table: {
			Keys:           keys[start:min(start+maxBatchGet, len(keys))],
			ConsistentRead: ptr(true),
		}}
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
