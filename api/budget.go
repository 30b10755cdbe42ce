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
// has. A body of declared length takes its bytes in one go before it is
// read, so that requests holding part of what they need cannot wait on
// each other until all fail; a client that declares a body and sends it
// slowly holds them until BodyTimeout. A chunked body takes its bytes as
// they arrive. They are given back when the request's handler returns, the
// decoded values gone with it.
type bodyBudget struct {
	sem   *semaphore.Weighted
	limit int64
	wait  time.Duration // for bytes others hold, before the request is refused
}

func newBodyBudget(limit int64, wait time.Duration) *bodyBudget {
	return &bodyBudget{sem: semaphore.NewWeighted(limit), limit: limit, wait: wait}
}

// take waits for n bytes of the budget: EUNAVAILABLE if they are not free
// within the budget's wait.
func (b *bodyBudget) take(ctx context.Context, n int64) error {
	if b.sem.TryAcquire(n) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	if b.sem.Acquire(ctx, n) != nil {
		return saver.Errorf(saver.EUNAVAILABLE, "The service holds its limit of %d request body bytes in memory; retry.", b.limit)
	}
	return nil
}

// body takes the bytes of a body of length bytes (-1: unknown) and returns
// it counted against the budget, with the function that gives its bytes
// back. The caller has refused lengths over the budget (MaxBodyBytes).
func (b *bodyBudget) body(ctx context.Context, r io.ReadCloser, length int64) (io.ReadCloser, func(), error) {
	if length >= 0 {
		if err := b.take(ctx, length); err != nil {
			return nil, nil, err
		}
		return r, func() { b.sem.Release(length) }, nil
	}
	cb := &chunkedBody{ReadCloser: r, ctx: ctx, budget: b}
	return cb, func() { b.sem.Release(cb.held) }, nil
}

// decoded takes n bytes more for a request that holds held bytes of body,
// for what its body takes once decoded (cost.go): a body's values can take
// many times its bytes, and they are held until the handler returns as the
// body is. EUNAVAILABLE as take; ETOOLARGE if the two are more than the
// whole budget, which no wait would free. Give them back with giveBack.
func (b *bodyBudget) decoded(ctx context.Context, held, n int64) error {
	if held+n > b.limit {
		return saver.Errorf(saver.ETOOLARGE, "Request body would take %d bytes once decoded, with its %d bytes over the limit of %d request body bytes in memory; send fewer elements per request.", n, held, b.limit)
	}
	return b.take(ctx, n)
}

// giveBack returns n bytes that decoded took.
func (b *bodyBudget) giveBack(n int64) { b.sem.Release(n) }

// chunkedBody takes each read's bytes from the budget.
type chunkedBody struct {
	io.ReadCloser
	ctx    context.Context
	budget *bodyBudget
	held   int64
}

func (c *chunkedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n == 0 {
		return n, err
	}
	if err := c.budget.take(c.ctx, int64(n)); err != nil {
		return n, err
	}
	c.held += int64(n)
	return n, err
}
