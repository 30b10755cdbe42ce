package dynamo

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/saver-dev/saver"
)

// fakeDB records the write and batch calls it gets. Calls it does not
// implement panic through the nil embedded interface.
type fakeDB struct {
	DynamoAPI
	transacts   [][]types.TransactWriteItem
	puts        int
	updates     int
	batchWrites []int // requests per BatchWriteItem call
	batchGets   []int // keys per BatchGetItem call
	// leave is how many items or keys each batch call leaves unprocessed,
	// call by call; the default is none.
	leave []int
	err   error
}

func (f *fakeDB) nextLeave() int {
	if len(f.leave) == 0 {
		return 0
	}
	n := f.leave[0]
	f.leave = f.leave[1:]
	return n
}

func (f *fakeDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.transacts = append(f.transacts, in.TransactItems)
	return &dynamodb.TransactWriteItemsOutput{}, f.err
}

func (f *fakeDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.puts++
	return &dynamodb.PutItemOutput{}, f.err
}

func (f *fakeDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.updates++
	return &dynamodb.UpdateItemOutput{}, f.err
}

func (f *fakeDB) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	var reqs []types.WriteRequest
	for _, r := range in.RequestItems {
		reqs = append(reqs, r...)
	}
	f.batchWrites = append(f.batchWrites, len(reqs))
	if len(reqs) > maxBatchWrite {
		return nil, errors.New("too many items in BatchWriteItem")
	}
	out := &dynamodb.BatchWriteItemOutput{}
	if n := min(f.nextLeave(), len(reqs)); n > 0 {
		out.UnprocessedItems = map[string][]types.WriteRequest{"t": reqs[len(reqs)-n:]}
	}
	return out, f.err
}

func (f *fakeDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	keys := in.RequestItems["t"].Keys
	f.batchGets = append(f.batchGets, len(keys))
	if len(keys) > maxBatchGet {
		return nil, errors.New("too many keys in BatchGetItem")
	}
	n := min(f.nextLeave(), len(keys))
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]item{"t": keys[:len(keys)-n]}}
	if n > 0 {
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{"t": {Keys: keys[len(keys)-n:]}}
	}
	return out, f.err
}

func testItems(n, size int) []item {
	out := make([]item, n)
	for i := range out {
		out[i] = item{
			attrPK:    attrS("p"),
			attrSK:    attrS(fmt.Sprint(i)),
			attrValue: &types.AttributeValueMemberB{Value: make([]byte, size)},
		}
	}
	return out
}

func ops(items []item) []writeOp {
	out := make([]writeOp, len(items))
	for i, it := range items {
		out[i] = writeOp{item: it}
		if i%2 == 0 {
			out[i].cond = absentOrExpired(time.Unix(1e9, 0))
		}
	}
	return out
}

func TestTransactChunks(t *testing.T) {
	tests := []struct {
		name      string
		items     int
		size      int
		transacts []int // items per TransactWriteItems call
		singles   int   // PutItem + UpdateItem calls
	}{
		{"One", 1, 10, nil, 1},
		{"Two", 2, 10, []int{2}, 0},
		{"Hundred", 100, 10, []int{100}, 0},
		{"HundredAndOne", 101, 10, []int{100}, 1},
		{"TwoHundredFifty", 250, 10, []int{100, 100, 50}, 0},
		{"SizeCap", 12, 390 << 10, []int{10, 2}, 0}, // 10 * 390 KiB fills 4 MiB
		{"SizeCapSingle", 11, 390 << 10, []int{10}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &fakeDB{}
			s := NewStore(db, "t")
			if err := s.transact(t.Context(), ops(testItems(tt.items, tt.size))); err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, tx := range db.transacts {
				if len(tx) > maxTransactItems {
					t.Fatalf("transaction of %d items", len(tx))
				}
				got = append(got, len(tx))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.transacts) || db.puts+db.updates != tt.singles {
				t.Fatalf("transactions %v and %d single writes, want %v and %d", got, db.puts+db.updates, tt.transacts, tt.singles)
			}
		})
	}
}

// TestTransactOrder checks that the last op (a checkpoint) goes in the last
// request, after every blob.
func TestTransactOrder(t *testing.T) {
	db := &fakeDB{}
	s := NewStore(db, "t")
	items := testItems(150, 10)
	items[149][attrSK] = attrS("checkpoint")
	if err := s.transact(t.Context(), ops(items)); err != nil {
		t.Fatal(err)
	}
	last := db.transacts[len(db.transacts)-1]
	w := last[len(last)-1]
	var sk types.AttributeValue
	if w.Put != nil {
		sk = w.Put.Item[attrSK]
	} else {
		sk = w.Update.Key[attrSK]
	}
	if got := sk.(*types.AttributeValueMemberS).Value; got != "checkpoint" {
		t.Fatalf("last item written is %q", got)
	}
}

func TestBatchWrite(t *testing.T) {
	tests := []struct {
		name  string
		items int
		leave []int
		calls []int
		code  string
	}{
		{"Empty", 0, nil, nil, ""},
		{"Cap", 60, nil, []int{25, 25, 10}, ""},
		{"Unprocessed", 30, []int{5, 2}, []int{25, 5, 2, 5}, ""},
		{"GivesUp", 3, []int{3, 3, 3, 3, 3, 3, 3, 3, 3}, []int{3, 3, 3, 3, 3, 3, 3, 3}, saver.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &fakeDB{leave: tt.leave}
			s := NewStore(db, "t")
			s.pause = func(context.Context, int) error { return nil }
			var reqs []types.WriteRequest
			for _, it := range testItems(tt.items, 1) {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
			}
			err := s.batchWrite(t.Context(), reqs)
			if got := saver.ErrorCode(err); got != tt.code {
				t.Fatalf("error %v, want code %q", err, tt.code)
			}
			if fmt.Sprint(db.batchWrites) != fmt.Sprint(tt.calls) {
				t.Fatalf("calls %v, want %v", db.batchWrites, tt.calls)
			}
		})
	}
}

func TestBatchGet(t *testing.T) {
	tests := []struct {
		name  string
		keys  int
		leave []int
		calls []int
		code  string
	}{
		{"Cap", 250, nil, []int{100, 100, 50}, ""},
		{"Unprocessed", 100, []int{40, 10}, []int{100, 40, 10}, ""},
		{"GivesUp", 1, []int{1, 1, 1, 1, 1, 1, 1, 1}, []int{1, 1, 1, 1, 1, 1, 1, 1}, saver.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &fakeDB{leave: tt.leave}
			s := NewStore(db, "t")
			s.pause = func(context.Context, int) error { return nil }
			got, err := s.batchGet(t.Context(), testItems(tt.keys, 0))
			if code := saver.ErrorCode(err); code != tt.code {
				t.Fatalf("error %v, want code %q", err, tt.code)
			}
			if fmt.Sprint(db.batchGets) != fmt.Sprint(tt.calls) {
				t.Fatalf("calls %v, want %v", db.batchGets, tt.calls)
			}
			if tt.code == "" && len(got) != tt.keys {
				t.Fatalf("got %d items, want %d", len(got), tt.keys)
			}
		})
	}
}

func TestTranslate(t *testing.T) {
	api := func(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: &code} }
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"ConditionFailed", &types.ConditionalCheckFailedException{}, saver.ECONFLICT},
		{"Throughput", &types.ProvisionedThroughputExceededException{}, saver.EUNAVAILABLE},
		{"Throttling", api("ThrottlingException", ""), saver.EUNAVAILABLE},
		{"RetriesExhausted", &retry.MaxAttemptsError{Attempt: 8, Err: api("InternalServerError", "")}, saver.EUNAVAILABLE},
		{"ItemTooLarge", api("ValidationException", "Item size has exceeded the maximum allowed size"), saver.ETOOLARGE},
		{"OtherValidation", api("ValidationException", "Invalid KeyConditionExpression"), saver.EINTERNAL},
		{"TableMissing", &types.ResourceNotFoundException{}, saver.EINTERNAL},
		{"CancelledByConflict", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("None"), reason("TransactionConflict")}}, saver.EUNAVAILABLE},
		{"CancelledByCondition", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("ConditionalCheckFailed")}}, saver.ECONFLICT},
		{"Deadline", context.DeadlineExceeded, saver.EUNAVAILABLE},
		{"Application", saver.Errorf(saver.ENOTFOUND, "x"), saver.ENOTFOUND},
		{"Other", errors.New("boom"), saver.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := translate(tt.err)
			if got := saver.ErrorCode(err); got != tt.want {
				t.Fatalf("code of %v = %q, want %q", err, got, tt.want)
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("translate dropped the original error: %v", err)
			}
		})
	}
}

// TestRetryableCancel checks the retryer's view of cancelled transactions:
// contention is retried, a failed condition is not.
func TestRetryableCancel(t *testing.T) {
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: &code} }
	conflict := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("TransactionConflict")}}
	condition := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("ConditionalCheckFailed")}}
	if got := retryableCancel(conflict); !got.Bool() {
		t.Error("transaction conflict is not retried")
	}
	if got := retryableCancel(condition); got.Bool() {
		t.Error("failed condition is retried")
	}
}
