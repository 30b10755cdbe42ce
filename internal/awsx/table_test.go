package awsx

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
)

// fakeDB records the write and batch calls it gets. Calls it does not
// implement panic through the nil embedded interface.
type fakeDB struct {
	DB
	transacts [][]types.TransactWriteItem
	// answer, when set, answers each TransactWriteItems call (call counts
	// from 1) instead of err.
	answer      func(call int, items []types.TransactWriteItem) error
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
	if f.answer != nil {
		return &dynamodb.TransactWriteItemsOutput{}, f.answer(len(f.transacts), in.TransactItems)
	}
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
	if len(reqs) > MaxBatchWrite {
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
	if len(keys) > MaxBatchGet {
		return nil, errors.New("too many keys in BatchGetItem")
	}
	n := min(f.nextLeave(), len(keys))
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]Item{"t": keys[:len(keys)-n]}}
	if n > 0 {
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{"t": {Keys: keys[len(keys)-n:]}}
	}
	return out, f.err
}

func testItems(n, size int) []Item {
	out := make([]Item, n)
	for i := range out {
		out[i] = Item{
			"PK":    &types.AttributeValueMemberS{Value: "p"},
			"SK":    &types.AttributeValueMemberS{Value: fmt.Sprint(i)},
			"value": &types.AttributeValueMemberB{Value: make([]byte, size)},
		}
	}
	return out
}

// ops puts items, every other one if absent.
func ops(items []Item) []WriteOp {
	out := make([]WriteOp, len(items))
	for i, it := range items {
		out[i] = WriteOp{Item: it}
		if i%2 == 0 {
			c := NewExpr("c")
			c.Text = "attribute_not_exists(" + c.Name("PK") + ")"
			out[i].Cond = c
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
		glued     int   // the last glued ops, from the end
	}{
		{"One", 1, 10, nil, 1, 0},
		{"Two", 2, 10, []int{2}, 0, 0},
		{"Hundred", 100, 10, []int{100}, 0, 0},
		{"HundredAndOne", 101, 10, []int{100}, 1, 0},
		{"TwoHundredFifty", 250, 10, []int{100, 100, 50}, 0, 0},
		{"SizeCap", 12, 390 << 10, []int{10, 2}, 0, 0}, // 10 * 390 KiB fills 4 MiB
		{"SizeCapSingle", 11, 390 << 10, []int{10}, 1, 0},
		// The last two glued: never one in each request.
		{"GluedAtTheEdge", 101, 10, []int{99, 2}, 0, 2},
		{"GluedInside", 100, 10, []int{100}, 0, 2},
		{"GluedSizeCap", 11, 390 << 10, []int{9, 2}, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &fakeDB{}
			s := NewTable(db, "t")
			o := ops(testItems(tt.items, tt.size))
			for i := len(o) - tt.glued; i < len(o)-1; i++ {
				o[i].Glue = true
			}
			if err := s.Transact(t.Context(), o); err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, tx := range db.transacts {
				if len(tx) > MaxTransactItems {
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
	s := NewTable(db, "t")
	items := testItems(150, 10)
	items[149]["SK"] = &types.AttributeValueMemberS{Value: "checkpoint"}
	if err := s.Transact(t.Context(), ops(items)); err != nil {
		t.Fatal(err)
	}
	last := db.transacts[len(db.transacts)-1]
	w := last[len(last)-1]
	var sk types.AttributeValue
	if w.Put != nil {
		sk = w.Put.Item["SK"]
	} else {
		sk = w.Update.Key["SK"]
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
			s := NewTable(db, "t")
			s.Pause = func(context.Context, int) error { return nil }
			var reqs []types.WriteRequest
			for _, it := range testItems(tt.items, 1) {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
			}
			err := s.BatchWrite(t.Context(), reqs)
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
			s := NewTable(db, "t")
			s.Pause = func(context.Context, int) error { return nil }
			got, err := s.BatchGet(t.Context(), testItems(tt.keys, 0))
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

// TestTransactReportsFailedConditions checks that failed conditions are
// reported by their index among all ops, across chunks, and that other
// cancellations are not taken for them.
func TestTransactReportsFailedConditions(t *testing.T) {
	stored := Item{"PK": &types.AttributeValueMemberS{Value: "p"}, "SK": &types.AttributeValueMemberS{Value: "x"}}
	db := &fakeDB{answer: func(call int, items []types.TransactWriteItem) error {
		if call == 2 {
			return cancel(len(items), map[int]Item{3: stored})
		}
		return nil
	}}
	s := NewTable(db, "t")
	err := s.Transact(t.Context(), ops(testItems(150, 10)))
	cf, ok := err.(*CondFailed)
	if !ok || len(cf.Items) != 1 || cf.Items[103] == nil {
		t.Fatalf("transact = %v, want the condition of op 103", err)
	}

	db.answer = func(int, []types.TransactWriteItem) error {
		return &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: ptr("ConditionalCheckFailed")}, {Code: ptr("ValidationError"), Message: ptr("bad")},
		}}
	}
	err = s.Transact(t.Context(), ops(testItems(2, 10)))
	if _, ok := err.(*CondFailed); ok || err == nil {
		t.Fatalf("transact = %v, want the cancellation translated", err)
	}
}

// cancel returns the cancellation of a transaction whose conditions failed
// on the items at the given indexes, each returned as stored.
func cancel(n int, failed map[int]Item) error {
	reasons := make([]types.CancellationReason, n)
	for i := range reasons {
		reasons[i].Code = ptr("None")
		if it, ok := failed[i]; ok {
			reasons[i] = types.CancellationReason{Code: ptr("ConditionalCheckFailed"), Item: it}
		}
	}
	return &types.TransactionCanceledException{CancellationReasons: reasons}
}

// TestChunksKeepChecksWithTheirOp: checks go in the request of the op after
// them, even when that op starts a new one.
func TestChunksKeepChecksWithTheirOp(t *testing.T) {
	check := WriteOp{Item: Item{"PK": &types.AttributeValueMemberS{Value: "gone"}}, Check: true, Cond: NewExpr("c")}
	for _, before := range []int{0, 1, 97, 98, 99, 150} {
		all := append(ops(testItems(before, 10)), check, check, ops(testItems(1, 10))[0])
		chunks := Chunks(all)
		last := chunks[len(chunks)-1]
		n := len(last)
		if n < 3 || !last[n-3].Check || !last[n-2].Check || last[n-1].Check {
			t.Fatalf("%d ops before: last chunk of %d ends %v, want the two checks and the op", before, n, last[max(0, n-3):])
		}
		total := 0
		for _, c := range chunks {
			if len(c) > MaxTransactItems {
				t.Fatalf("%d ops before: a chunk of %d", before, len(c))
			}
			total += len(c)
		}
		if total != len(all) {
			t.Fatalf("%d ops before: chunks hold %d ops, want %d", before, total, len(all))
		}
	}
}

// TestChunksKeepChecksWithGluedOps: checks before a glued pair (a
// checkpoint and its index item) go in the request of the pair, which is
// never split, wherever the request limit falls.
func TestChunksKeepChecksWithGluedOps(t *testing.T) {
	check := WriteOp{Item: Item{"PK": &types.AttributeValueMemberS{Value: "gone"}}, Check: true, Cond: NewExpr("c")}
	for _, before := range []int{0, 1, 96, 97, 98, 99, 150} {
		pair := ops(testItems(2, 10))
		pair[0].Glue = true
		all := append(ops(testItems(before, 10)), check, check, pair[0], pair[1])
		chunks := Chunks(all)
		last := chunks[len(chunks)-1]
		n := len(last)
		if n < 4 || !last[n-4].Check || !last[n-3].Check || !last[n-2].Glue || last[n-1].Check || last[n-1].Glue {
			t.Fatalf("%d ops before: last chunk of %d ends %v, want the two checks and the glued pair", before, n, last[max(0, n-4):])
		}
		total := 0
		for _, c := range chunks {
			if len(c) > MaxTransactItems {
				t.Fatalf("%d ops before: a chunk of %d", before, len(c))
			}
			total += len(c)
		}
		if total != len(all) {
			t.Fatalf("%d ops before: chunks hold %d ops, want %d", before, total, len(all))
		}
	}
}
