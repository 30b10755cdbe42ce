package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/saver-dev/saver"
)

// Messages for callers; the SDK error stays in the chain for the logs.
const (
	msgUnavailable = "DynamoDB is throttling or unavailable; retry later."
	msgTooLarge    = "The item is over DynamoDB's size limit."
	msgConflict    = "A condition on the stored item did not hold."
)

// throttleCodes are the error codes DynamoDB answers with when it sheds load
// or cannot serve now. By the time they reach translate the SDK's retryer
// has already retried them with backoff.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"LimitExceededException":                 true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
	"TransactionConflictException":           true,
	"TransactionInProgressException":         true,
	"ReplicatedWriteConflictException":       true,
}

// translate gives an SDK error the saver code a caller can act on. It is
// called once, where the store sees the error; the original error stays in
// the chain. Application errors pass through unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var se *saver.Error
	if errors.As(err, &se) {
		return err
	}
	if code := errorCode(err); code != "" {
		return fmt.Errorf("%w: %w", saver.Errorf(code, "%s", message(code)), err)
	}
	return err
}

func message(code string) string {
	switch code {
	case saver.EUNAVAILABLE:
		return msgUnavailable
	case saver.ETOOLARGE:
		return msgTooLarge
	case saver.ECONFLICT:
		return msgConflict
	}
	return "Internal error."
}

// errorCode returns the saver code for an SDK error, "" for EINTERNAL.
func errorCode(err error) string {
	var (
		ccf       *types.ConditionalCheckFailedException
		canceled  *types.TransactionCanceledException
		maxTries  *retry.MaxAttemptsError
		quota     *ratelimit.QuotaExceededError
		send      *smithyhttp.RequestSendError
		netErr    net.Error
		apiErr    smithy.APIError
		collSize  *types.ItemCollectionSizeLimitExceededException
		respError *smithyhttp.ResponseError
	)
	switch {
	case errors.As(err, &ccf):
		return saver.ECONFLICT
	case errors.As(err, &canceled):
		return canceledCode(canceled)
	case errors.As(err, &collSize):
		return saver.ETOOLARGE
	case errors.As(err, &apiErr) && throttleCodes[apiErr.ErrorCode()]:
		return saver.EUNAVAILABLE
	case errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "size"):
		return saver.ETOOLARGE
	case errors.As(err, &maxTries), errors.As(err, &quota), errors.As(err, &send), errors.As(err, &netErr):
		return saver.EUNAVAILABLE
	case errors.As(err, &respError) && respError.HTTPStatusCode() >= 500:
		return saver.EUNAVAILABLE
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return saver.EUNAVAILABLE
	}
	return ""
}

// canceledCode classifies a cancelled transaction by its reasons: a failed
// condition is a conflict, contention or throttling is retryable, an item
// over the limit is too large.
func canceledCode(e *types.TransactionCanceledException) string {
	code := saver.EUNAVAILABLE
	for _, r := range e.CancellationReasons {
		switch c := deref(r.Code); c {
		case "", "None":
		case "ConditionalCheckFailed":
			return saver.ECONFLICT
		case "ItemCollectionSizeLimitExceeded":
			return saver.ETOOLARGE
		case "ValidationError":
			if strings.Contains(strings.ToLower(deref(r.Message)), "size") {
				return saver.ETOOLARGE
			}
			code = ""
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
		default:
			code = ""
		}
	}
	return code
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
