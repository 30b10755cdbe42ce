package s3offload

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// Retry policy, as for DynamoDB (see dynamo.NewRetryer): exponential backoff
// with full jitter from 1 s for throttling (S3's 503 SlowDown) and BaseDelay
// otherwise, each wait under MaxBackoff, then EUNAVAILABLE.
const (
	MaxAttempts = 6
	MaxBackoff  = time.Second
	BaseDelay   = 25 * time.Millisecond
)

// NewRetryer returns the SDK retryer the store's client uses.
func NewRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = MaxAttempts
		o.MaxBackoff = MaxBackoff
		o.BaseDelay = BaseDelay
	})
}

// NewClient returns an S3 client for cfg with the store's retryer. With a
// custom endpoint (AWS_ENDPOINT_URL_S3, as a local stack sets) it addresses
// buckets by path, which emulators need; against AWS nothing changes.
// apiOptions are added to every operation's stack (a request counter, say).
func NewClient(cfg aws.Config, apiOptions ...func(*middleware.Stack) error) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = NewRetryer()
		if o.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
		o.APIOptions = append(o.APIOptions, apiOptions...)
	})
}
