package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver/internal/awsx"
)

// Retry policy (awsx.NewRetryer). DynamoDB throttles by partition and
// recovers in well under a second, so a request is tried up to MaxAttempts
// times: at most 7 s of waits in all when every try is throttled (3.5 s
// expected) and 2.6 s otherwise. The API's request timeout (5 s by default)
// ends them sooner; either way the store returns EUNAVAILABLE and the API
// answers 503 with Retry-After.
const (
	MaxAttempts = 8
	MaxBackoff  = awsx.MaxBackoff
	BaseDelay   = awsx.BaseDelay
)

// NewRetryer returns the SDK retryer the store's client should use: the
// policy above, also retrying transactions cancelled only by contention or
// throttling, and writes refused because a transaction held their item
// (awsx.RetryTransactionConflicts). Every write the store sends is
// idempotent or conditioned, so sending it again is safe.
func NewRetryer() aws.Retryer { return awsx.NewRetryer(MaxAttempts, awsx.RetryTransactionConflicts) }

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

// Counter counts the requests an SDK client sends, by operation name; see
// awsx.Counter. Tests assert request counts with it; metrics read Snapshot.
type Counter = awsx.Counter

// NewCounter returns a counter at zero.
func NewCounter() *Counter { return awsx.NewCounter() }
