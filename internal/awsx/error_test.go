package awsx

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/saver-dev/saver"
)

func TestDynamoError(t *testing.T) {
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
			err := DynamoError(tt.err)
			if got := saver.ErrorCode(err); got != tt.want {
				t.Fatalf("code of %v = %q, want %q", err, got, tt.want)
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("DynamoError dropped the original error: %v", err)
			}
		})
	}
}

func TestS3Error(t *testing.T) {
	api := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }
	failed := &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusInternalServerError}},
		Err:      api("InternalError"),
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"SlowDown", api("SlowDown"), saver.EUNAVAILABLE},
		{"ServiceUnavailable", api("ServiceUnavailable"), saver.EUNAVAILABLE},
		{"RequestTimeout", api("RequestTimeout"), saver.EUNAVAILABLE},
		{"500", failed, saver.EUNAVAILABLE},
		{"RetriesExhausted", &retry.MaxAttemptsError{Attempt: 6, Err: api("SlowDown")}, saver.EUNAVAILABLE},
		{"Deadline", context.DeadlineExceeded, saver.EUNAVAILABLE},
		// An object an item points at is gone: corrupt data, not a retry.
		{"NoSuchKey", &s3types.NoSuchKey{}, saver.EINTERNAL},
		{"AccessDenied", api("AccessDenied"), saver.EINTERNAL},
		{"Other", errors.New("boom"), saver.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := S3Error(tt.err)
			if got := saver.ErrorCode(err); got != tt.want {
				t.Fatalf("code of %v = %q, want %q", err, got, tt.want)
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("S3Error dropped the original error: %v", err)
			}
			if tt.want == saver.EUNAVAILABLE && saver.ErrorMessage(err) != "S3 is throttling or unavailable; retry later." {
				t.Fatalf("message %q", saver.ErrorMessage(err))
			}
		})
	}
}
