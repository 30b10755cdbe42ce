package awsx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/saver-dev/saver"
)

// DynamoError gives an error of a DynamoDB call the saver code a caller can
// act on: a failed condition is ECONFLICT, throttling and transient errors
// (already retried by the SDK) EUNAVAILABLE, an item over the size limit
// ETOOLARGE, anything else stays EINTERNAL. It is called once, where the
// error is seen; the SDK error stays in the chain for the logs, and
// application errors pass through unchanged.
func DynamoError(err error) error { return classified(err, "DynamoDB", dynamoCode(err)) }

// S3Error is DynamoError for S3 calls, whose only code is EUNAVAILABLE. A
// missing object stays EINTERNAL: it is only ever read because an item
// points at it, so its absence is corrupt data.
func S3Error(err error) error { return classified(err, "S3", s3Code(err)) }

// Unavailable is the message of EUNAVAILABLE for a service.
func Unavailable(service string) string {
	return service + " is throttling or unavailable; retry later."
}

func classified(err error, service, code string) error {
	var se *saver.Error
	if err == nil || code == "" || errors.As(err, &se) {
		return err
	}
	msg := "Internal error."
	switch code {
	case saver.EUNAVAILABLE:
		msg = Unavailable(service)
	case saver.ETOOLARGE:
		msg = "The item is over DynamoDB's size limit."
	case saver.ECONFLICT:
		msg = "A condition on the stored item did not hold."
	}
	return fmt.Errorf("%w: %w", saver.Errorf(code, "%s", msg), err)
}

// throttleCodes are the error codes DynamoDB answers with when it sheds load
// or cannot serve now. By the time they reach DynamoError the SDK's retryer
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

// s3Unavailable are the error codes S3 answers with when it sheds load or
// cannot serve now.
var s3Unavailable = map[string]bool{
	"SlowDown":           true,
	"ServiceUnavailable": true,
	"InternalError":      true,
	"RequestTimeout":     true,
}

// dynamoCode returns the saver code of a DynamoDB error, "" for EINTERNAL.
func dynamoCode(err error) string {
	var (
		ccf      *types.ConditionalCheckFailedException
		canceled *types.TransactionCanceledException
		collSize *types.ItemCollectionSizeLimitExceededException
		apiErr   smithy.APIError
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
	}
	return transientCode(err)
}

// s3Code returns EUNAVAILABLE for an S3 error that may pass, "" otherwise.
func s3Code(err error) string {
	var (
		noKey  *s3types.NoSuchKey
		apiErr smithy.APIError
	)
	switch {
	case errors.As(err, &noKey):
		return ""
	case errors.As(err, &apiErr) && s3Unavailable[apiErr.ErrorCode()]:
		return saver.EUNAVAILABLE
	}
	return transientCode(err)
}

// transientCode returns EUNAVAILABLE for what any AWS call may meet and
// that may pass: retries or the retry quota exhausted, a request that could
// not be sent, a network error, a 5xx answer, the caller's deadline.
func transientCode(err error) string {
	var (
		maxTries *retry.MaxAttemptsError
		quota    *ratelimit.QuotaExceededError
		send     *smithyhttp.RequestSendError
		netErr   net.Error
		resp     *smithyhttp.ResponseError
	)
	switch {
	case errors.As(err, &maxTries), errors.As(err, &quota), errors.As(err, &send), errors.As(err, &netErr):
		return saver.EUNAVAILABLE
	case errors.As(err, &resp) && resp.HTTPStatusCode() >= 500:
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
		case "TransactionConflict":
		default:
			if !throttlingReasons[c] {
				code = ""
			}
		}
	}
	return code
}

// throttlingReasons are the cancellation reasons of a transaction that
// throttling cancelled: the retryer retries them, and they are EUNAVAILABLE.
var throttlingReasons = map[string]bool{
	"ThrottlingError": true, "ProvisionedThroughputExceeded": true, "RequestLimitExceeded": true,
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
