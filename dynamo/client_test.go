package dynamo_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/s3offload"
)

// TestRetryDelays draws the retryers' waits: each under min(base * 2^retry,
// MaxBackoff), spread out (full jitter, not one fixed delay), and bounded in
// sum as dynamo.NewRetryer documents.
func TestRetryDelays(t *testing.T) {
	throttled := &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
	cancelled := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
		{Code: aws.String("None")}, {Code: aws.String("ThrottlingError")},
	}}
	failed := &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusInternalServerError}},
		Err:      &smithy.GenericAPIError{Code: "InternalServerError", Message: "boom"},
	}
	slowDown := &smithy.GenericAPIError{Code: "SlowDown", Message: "reduce your request rate"}
	conflict := &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
	tests := []struct {
		name     string
		retryer  aws.Retryer
		attempts int
		max      time.Duration
		err      error
		base     time.Duration
		worst    time.Duration // sum of the ceilings of every wait
	}{
		{"dynamo/throttled", dynamo.NewRetryer(), dynamo.MaxAttempts, dynamo.MaxBackoff, throttled, time.Second, 7 * time.Second},
		{"dynamo/transaction-throttled", dynamo.NewRetryer(), dynamo.MaxAttempts, dynamo.MaxBackoff, cancelled, time.Second, 7 * time.Second},
		{"dynamo/500", dynamo.NewRetryer(), dynamo.MaxAttempts, dynamo.MaxBackoff, failed, dynamo.BaseDelay, 2575 * time.Millisecond},
		{"dynamo/write-in-a-transaction", dynamo.NewRetryer(), dynamo.MaxAttempts, dynamo.MaxBackoff, conflict, dynamo.BaseDelay, 2575 * time.Millisecond},
		{"s3/slow-down", s3offload.NewRetryer(), s3offload.MaxAttempts, s3offload.MaxBackoff, slowDown, time.Second, 5 * time.Second},
		{"s3/500", s3offload.NewRetryer(), s3offload.MaxAttempts, s3offload.MaxBackoff, failed, s3offload.BaseDelay, 775 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.retryer.IsErrorRetryable(tt.err) {
				t.Fatalf("%v is not retried", tt.err)
			}
			var worst time.Duration
			for attempt := 1; attempt < tt.attempts; attempt++ {
				ceiling := min(tt.base<<(attempt-1), tt.max)
				worst += ceiling
				seen := map[time.Duration]bool{}
				for range 100 {
					d, err := tt.retryer.RetryDelay(attempt, tt.err)
					if err != nil {
						t.Fatal(err)
					}
					if d < 0 || d > ceiling {
						t.Fatalf("attempt %d: wait %v outside [0, %v]", attempt, d, ceiling)
					}
					seen[d] = true
				}
				if len(seen) < 50 {
					t.Fatalf("attempt %d: %d distinct waits in 100 draws; want them jittered", attempt, len(seen))
				}
			}
			if worst != tt.worst {
				t.Fatalf("waits sum to at most %v, want %v", worst, tt.worst)
			}
		})
	}
}
