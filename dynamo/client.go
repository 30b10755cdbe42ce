package dynamo

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Retry policy. DynamoDB throttles by partition and recovers in well under a
// second, so a request is tried up to MaxAttempts times. Each wait is drawn
// uniformly below min(base * 2^retry, MaxBackoff) (full jitter, so that the
// retries of many callers spread out), where base is 1 s for throttling,
// as the SDK fixes it, and BaseDelay for other errors: at most 7 s of waits
// in all when every try is throttled (3.5 s expected) and 2.6 s otherwise.
// The API's request timeout (5 s by default) ends them sooner; either way
// the store returns EUNAVAILABLE and the API answers 503 with Retry-After.
//
// The SDK's retry quota stays on: when most calls fail (DynamoDB down),
// it stops retrying until calls succeed again, so that an outage costs
// callers a quick 503 rather than every request waiting out its retries.
const (
	MaxAttempts = 8
	MaxBackoff  = time.Second
	BaseDelay   = 25 * time.Millisecond
)

// NewRetryer returns the SDK retryer the store's client should use: the
// standard one with the policy above, also retrying transactions cancelled
// only by contention or throttling, and writes refused because a
// transaction held their item (TransactionConflictException, which the SDK
// does not retry by itself). Every write the store sends is idempotent or
// conditioned, so sending it again is safe.
func NewRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = MaxAttempts
		o.MaxBackoff = MaxBackoff
		o.BaseDelay = BaseDelay
		o.Retryables = append(o.Retryables,
			retry.IsErrorRetryableFunc(retryableCancel),
			retry.RetryableErrorCode{Codes: map[string]struct{}{"TransactionConflictException": {}}})
		o.Throttles = append(o.Throttles, retry.IsErrorThrottleFunc(throttledCancel))
	})
}

// NewClient returns a DynamoDB client for cfg with the store's retryer and,
// when counter is not nil, its request counting. Endpoints come from cfg as
// the SDK resolves them (AWS_ENDPOINT_URL_DYNAMODB for a local stack).
func NewClient(cfg aws.Config, counter *Counter, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := []func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.Retryer = NewRetryer()
		if counter != nil {
			o.APIOptions = append(o.APIOptions, counter.Register)
		}
	}}
	return dynamodb.NewFromConfig(cfg, append(opts, optFns...)...)
}

func retryableCancel(err error) aws.Ternary {
	var e *types.TransactionCanceledException
	if errors.As(err, &e) && canceledCode(e) == "unavailable" {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

func throttledCancel(err error) aws.Ternary {
	var e *types.TransactionCanceledException
	if !errors.As(err, &e) {
		return aws.UnknownTernary
	}
	for _, r := range e.CancellationReasons {
		switch deref(r.Code) {
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			return aws.TrueTernary
		}
	}
	return aws.UnknownTernary
}
