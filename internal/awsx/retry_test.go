package awsx

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

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
