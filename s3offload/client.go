package s3offload

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/saver-dev/saver/internal/awsx"
)

// Retry policy, as for DynamoDB (awsx.NewRetryer): exponential backoff with
// full jitter from 1 s for throttling (S3's 503 SlowDown) and BaseDelay
// otherwise, each wait under MaxBackoff, MaxAttempts tries, then
// EUNAVAILABLE.
const (
	MaxAttempts = 6
	MaxBackoff  = awsx.MaxBackoff
	BaseDelay   = awsx.BaseDelay
)

// NewRetryer returns the SDK retryer the store's client uses.
func NewRetryer() aws.Retryer { return awsx.NewRetryer(MaxAttempts) }

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
