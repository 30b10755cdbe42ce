package awsx

import (
	"context"
	"maps"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts the requests an SDK client sends, by operation name
// ("Query", "BatchGetItem", ...). Every attempt counts, retries included:
// it is what DynamoDB bills and what a latency budget pays for. It works on
// any aws-sdk-go-v2 client (the S3 one too) through APIOptions, and is safe
// for concurrent use. Tests assert request counts with it; metrics can read
// Snapshot.
type Counter struct {
	mu     sync.Mutex
	n      map[string]int64
	failed map[string]int64 // attempts that got an error (then retried or returned)
}

// NewCounter returns a counter at zero.
func NewCounter() *Counter { return &Counter{n: map[string]int64{}} }

// Register adds the counting middleware to an operation's stack; use it as
// an entry of the client's APIOptions. It sits after the retry middleware,
// so it runs once per attempt.
func (c *Counter) Register(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("saver.CountRequests",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			out, md, err := next.HandleFinalize(ctx, in)
			c.add(op, err != nil)
			return out, md, err
		}), middleware.After)
}

func (c *Counter) add(op string, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int64{}
	}
	c.n[op]++
	if failed {
		if c.failed == nil {
			c.failed = map[string]int64{}
		}
		c.failed[op]++
	}
}

// Snapshot returns the counts so far by operation.
func (c *Counter) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// Failed returns, by operation, the attempts so far that got an error:
// those the SDK retried are among Snapshot's counts too. A test that pins
// request counts reports them, to tell a transient failure of the
// emulator from a change in the store's requests.
func (c *Counter) Failed() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.failed)
}

// Total returns the number of requests so far.
func (c *Counter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t int64
	for _, v := range c.n {
		t += v
	}
	return t
}

// Reset sets every count back to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.n)
	clear(c.failed)
}
