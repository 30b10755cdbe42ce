package awsx

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
)

// The retry policy of both stores' clients. A request is tried up to the
// client's number of attempts; each wait is drawn uniformly below
// min(base * 2^retry, MaxBackoff) (full jitter, so that the retries of many
// callers spread out), where base is 1 s for throttling, as the SDK fixes
// it, and BaseDelay for other errors. When they run out the store returns
// EUNAVAILABLE and the API answers 503 with Retry-After.
//
// The SDK's retry quota stays on: when most calls fail (the service down),
// it stops retrying until calls succeed again, so that an outage costs
// callers a quick 503 rather than every request waiting out its retries.
const (
	MaxBackoff = time.Second
	BaseDelay  = 25 * time.Millisecond
)

// NewRetryer returns the standard SDK retryer with the policy above and
// attempts tries, changed further by opts.
func NewRetryer(attempts int, opts ...func(*retry.StandardOptions)) aws.Retryer {
	return retry.NewStandard(append([]func(*retry.StandardOptions){func(o *retry.StandardOptions) {
		o.MaxAttempts = attempts
		o.MaxBackoff = MaxBackoff
		o.BaseDelay = BaseDelay
	}}, opts...)...)
}

// RetryTransactionConflicts makes a DynamoDB retryer also retry transactions
// cancelled only by contention or throttling (throttling waits as such), and
// writes refused because a transaction held their item
// (TransactionConflictException), which the SDK does not retry by itself.
func RetryTransactionConflicts(o *retry.StandardOptions) {
	o.Retryables = append(o.Retryables,
		retry.IsErrorRetryableFunc(retryableCancel),
		retry.RetryableErrorCode{Codes: map[string]struct{}{"TransactionConflictException": {}}})
	o.Throttles = append(o.Throttles, retry.IsErrorThrottleFunc(throttledCancel))
}

func retryableCancel(err error) aws.Ternary {
	var e *types.TransactionCanceledException
	if errors.As(err, &e) && canceledCode(e) == saver.EUNAVAILABLE {
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
		if throttlingReasons[deref(r.Code)] {
			return aws.TrueTernary
		}
	}
	return aws.UnknownTernary
}
