package s3offload

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// Retry policy, as for DynamoDB: exponential backoff with full jitter, then
// EUNAVAILABLE.
const (
	MaxAttempts = 6
	MaxBackoff  = 2 * time.Second
)

// NewClient returns an S3 client for cfg with the store's retryer. With a
// custom endpoint (AWS_ENDPOINT_URL_S3, as a local stack sets) it addresses
// buckets by path, which emulators need; against AWS nothing changes.
// apiOptions are added to every operation's stack (a request counter, say).
func NewClient(cfg aws.Config, apiOptions ...func(*middleware.Stack) error) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = MaxAttempts
			so.MaxBackoff = MaxBackoff
			so.Backoff = retry.NewExponentialJitterBackoff(MaxBackoff)
		})
		if o.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
		o.APIOptions = append(o.APIOptions, apiOptions...)
	})
}
