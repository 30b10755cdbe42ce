package api

import (
	"context"
	"io"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/saver-dev/saver"
)

// bodyBudget bounds the request body bytes all requests hold at once, so
// that many connections sending large bodies together cannot take the
// memory of the process: MaxConns × MaxBodyBytes is far more than a machine
// has. Bytes count as they arrive, not as Content-Length declares them, so
// a client cannot hold the budget with bodies it never sends; they are
// given back when the request's handler returns, the decoded values gone
// with it.
type bodyBudget struct {
	sem   *semaphore.Weighted
	limit int64
	wait  time.Duration // for bytes others hold, before the request is refused
}

func newBodyBudget(limit int64, wait time.Duration) *bodyBudget {
	return &bodyBudget{sem: semaphore.NewWeighted(limit), limit: limit, wait: wait}
}

// body returns r counted against the budget, and the function that gives
// its bytes back.
func (b *bodyBudget) body(ctx context.Context, r io.ReadCloser) (io.ReadCloser, func()) {
	cb := &countedBody{ReadCloser: r, ctx: ctx, budget: b}
	return cb, func() { b.sem.Release(cb.held) }
}

// countedBody takes each read's bytes from the budget, waiting up to the
// budget's wait for them.
type countedBody struct {
	io.ReadCloser
	ctx    context.Context
	budget *bodyBudget
	held   int64
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n == 0 {
		return n, err
	}
	if !c.budget.sem.TryAcquire(int64(n)) {
		ctx, cancel := context.WithTimeout(c.ctx, c.budget.wait)
		defer cancel()
		if c.budget.sem.Acquire(ctx, int64(n)) != nil {
			return n, saver.Errorf(saver.EUNAVAILABLE, "The service holds its limit of %d request body bytes in memory; retry.", c.budget.limit)
		}
	}
	c.held += int64(n)
	return n, err
}
