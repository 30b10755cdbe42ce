package dynamo

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// ledgerDB holds one ledger record and answers conditional writes as if
// each condition failed whenever a record is stored (enough to check how a
// claim reads a failed condition), counting the calls.
type ledgerDB struct {
	DynamoAPI
	stored  item
	updates int
	puts    int
}

func (d *ledgerDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.updates++
	if d.stored != nil {
		return nil, &types.ConditionalCheckFailedException{Item: d.stored}
	}
	return &dynamodb.UpdateItemOutput{Attributes: item{attrAttempt: attrN(1)}}, nil
}

func (d *ledgerDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.puts++
	d.stored = nil // the expired record is replaced
	return &dynamodb.PutItemOutput{}, nil
}

// TestClaimReadsFailedCondition checks what a claim reports from the record
// its condition failed on, and that it costs one request, or two when the
// record expired and is replaced.
func TestClaimReadsFailedCondition(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	in := saver.ClaimRequest{Tenant: "t", Key: "k", Lease: time.Minute, TTL: time.Hour}
	record := func(state saver.ClaimState, extra item) item {
		it := item{attrState: attrS(string(state)), attrToken: attrS("tok"), attrAttempt: attrN(2), attrExpiresAt: attrN(now.Unix() + 60)}
		for k, v := range extra {
			it[k] = v
		}
		return it
	}
	result := saver.Typed{Type: "msgpack", Data: []byte{0, 1}}
	tests := []struct {
		name    string
		stored  item
		want    saver.Claim
		updates int
		puts    int
	}{
		{"New", nil, saver.Claim{Key: "k", State: saver.ClaimClaimed, Attempt: 1, LeaseExpiresAt: now.Add(time.Minute)}, 1, 0},
		{"InProgress", record(saver.ClaimClaimed, item{attrLease: attrN(now.UnixMilli() + 1)}),
			saver.Claim{Key: "k", State: saver.ClaimInProgress, Attempt: 2, LeaseExpiresAt: now.Add(time.Millisecond)}, 1, 0},
		{"Completed", record(saver.ClaimCompleted, item{attrResult: payloadAttr(result)}),
			saver.Claim{Key: "k", State: saver.ClaimCompleted, Attempt: 2, Result: &result}, 1, 0},
		{"Failed", record(saver.ClaimFailed, item{attrError: &types.AttributeValueMemberM{Value: item{errorMessage: attrS("no"), errorRetry: &types.AttributeValueMemberBOOL{}}}}),
			saver.Claim{Key: "k", State: saver.ClaimFailed, Attempt: 2, Error: &saver.ClaimError{Message: "no"}}, 1, 0},
		{"Expired", record(saver.ClaimCompleted, item{attrExpiresAt: attrN(now.Unix())}),
			saver.Claim{Key: "k", State: saver.ClaimClaimed, Attempt: 1, LeaseExpiresAt: now.Add(time.Minute)}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &ledgerDB{stored: tt.stored}
			s := NewStore(db, "t")
			s.Now = func() time.Time { return now }
			got, err := s.Claim(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Token" }, cmp.Ignore())); diff != "" {
				t.Fatalf("claim mismatch (-want +got):\n%s", diff)
			}
			if (got.State == saver.ClaimClaimed) != (got.Token != "") {
				t.Fatalf("claim in state %s has token %q", got.State, got.Token)
			}
			if db.updates != tt.updates || db.puts != tt.puts {
				t.Fatalf("%d updates and %d puts, want %d and %d", db.updates, db.puts, tt.updates, tt.puts)
			}
		})
	}
}

// TestCompleteTooLarge refuses a result over MaxResultBytes before any
// request.
func TestCompleteTooLarge(t *testing.T) {
	db := &ledgerDB{}
	s := NewStore(db, "t")
	err := s.Complete(t.Context(), "t", "k", "tok", saver.Typed{Type: "bytes", Data: make([]byte, MaxResultBytes)})
	if got := saver.ErrorCode(err); got != saver.ETOOLARGE || db.updates != 0 {
		t.Fatalf("Complete = %v after %d requests, want %s before any", err, db.updates, saver.ETOOLARGE)
	}
}

func TestLedgerTimes(t *testing.T) {
	if got := ceilSeconds(time.Unix(10, 0)); got != 10 {
		t.Errorf("ceilSeconds(10s) = %d", got)
	}
	if got := ceilSeconds(time.Unix(10, 1)); got != 11 {
		t.Errorf("ceilSeconds(10s+1ns) = %d", got)
	}
	for d, want := range map[time.Duration]int64{time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, time.Hour: 3600} {
		if got := ttlSeconds(d); got != want {
			t.Errorf("ttlSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestLedgerKeys checks that ledger partitions never equal a thread's.
func TestLedgerKeys(t *testing.T) {
	for _, thread := range []string{"~ledger", "~ledger!k", "~ledger!k!", ledgerPart} {
		for _, k := range []string{"k", "k!", ""} {
			if getS(ledgerKey("t", k), attrPK) == partitionKey("t", thread) {
				t.Fatalf("key %q and thread %q share a partition", k, thread)
			}
		}
	}
}
