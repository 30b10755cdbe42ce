package s3offload

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/saver-dev/saver"
)

const msgUnavailable = "S3 is throttling or unavailable; retry later."

// translate gives an SDK error the saver code a caller can act on, keeping
// the original in the chain. A missing object stays EINTERNAL: it is only
// ever read because an item points at it, so its absence is corrupt data.
func translate(err error) error {
	if err == nil || errorCode(err) == "" {
		return err
	}
	return fmt.Errorf("%w: %w", saver.Errorf(saver.EUNAVAILABLE, msgUnavailable), err)
}

// errorCode returns saver.EUNAVAILABLE for throttling and transient errors
// (already retried by the SDK), "" for anything else.
func errorCode(err error) string {
	var (
		noKey    *types.NoSuchKey
		apiErr   smithy.APIError
		maxTries *retry.MaxAttemptsError
		quota    *ratelimit.QuotaExceededError
		send     *smithyhttp.RequestSendError
		netErr   net.Error
		resp     *smithyhttp.ResponseError
	)
	switch {
	case errors.As(err, &noKey):
		return ""
	case errors.As(err, &apiErr) && (apiErr.ErrorCode() == "SlowDown" || apiErr.ErrorCode() == "ServiceUnavailable" ||
		apiErr.ErrorCode() == "InternalError" || apiErr.ErrorCode() == "RequestTimeout"):
		return saver.EUNAVAILABLE
	case errors.As(err, &maxTries), errors.As(err, &quota), errors.As(err, &send), errors.As(err, &netErr):
		return saver.EUNAVAILABLE
	case errors.As(err, &resp) && resp.HTTPStatusCode() >= 500:
		return saver.EUNAVAILABLE
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return saver.EUNAVAILABLE
	}
	return ""
}
