package api

import (
	"context"
	"io"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/saver-dev/saver"
)

// memoryBudget bounds the bytes all requests hold at once of one kind
// (request bodies, or answers), so that many requests together cannot take
// the memory of the process. Each client (see clientKey) may hold only its
// share: its bytes come from its share first, so a client past it waits on
// its own requests only, and the budget still bounds all clients together.
// A share below the budget leaves room that one client can never take;
// many clients each at their share can still fill it, and then wait.
type memoryBudget struct {
	what   string // the bytes counted, for messages: "request body", "response"
	sem    *semaphore.Weighted
	limit  int64
	shares *shares       // nil: no share per client
	wait   time.Duration // for bytes others hold, before the request is refused
}

// newMemoryBudget returns a budget of limit bytes of what, of which one
// client may hold share (0, or limit or more: all of it).
func newMemoryBudget(what string, limit, share int64, wait time.Duration) *memoryBudget {
	b := &memoryBudget{what: what, sem: semaphore.NewWeighted(limit), limit: limit, wait: wait}
	if share > 0 && share < limit {
		b.shares = newShares(share)
	}
	return b
}

// most is what one request may hold: the whole budget, or its client's
// share.
func (b *memoryBudget) most() int64 {
	if b.shares != nil {
		return b.shares.limit
	}
	return b.limit
}

// take waits for n bytes of client's share and of the budget:
// EUNAVAILABLE if they are not free within the budget's wait. Bytes free
// now are taken whatever ctx says, so that a request whose context has
// ended can still be answered.
func (b *memoryBudget) take(ctx context.Context, client string, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	if b.shares != nil && !b.shares.tryAcquire(client, n) && b.shares.acquire(ctx, client, n) != nil {
		return saver.Errorf(saver.EUNAVAILABLE, "Your requests hold their share of %d %s bytes in memory; retry once some are answered.", b.shares.limit, b.what)
	}
	if !b.sem.TryAcquire(n) && b.sem.Acquire(ctx, n) != nil {
		b.giveShare(client, n)
		return saver.Errorf(saver.EUNAVAILABLE, "The service holds its limit of %d %s bytes in memory; retry.", b.limit, b.what)
	}
	return nil
}

// give returns n bytes client took.
func (b *memoryBudget) give(client string, n int64) {
	b.sem.Release(n)
	b.giveShare(client, n)
}

func (b *memoryBudget) giveShare(client string, n int64) {
	if b.shares != nil {
		b.shares.release(client, n)
	}
}

// bodyBudget is the memoryBudget of request bodies: MaxConns × MaxBodyBytes
// is far more than a machine has, and one tenant holding sixteen slow
// 32 MiB uploads once made every other tenant's puts wait and fail. A body
// of declared length takes its bytes in one go before it is read, so that
// requests holding part of what they need cannot wait on each other until
// all fail; a client that declares a body and sends it slowly holds them
// until BodyTimeout. A chunked body takes its bytes as they arrive. What a
// body takes once decoded is taken before it is decoded (decoded). All are
// given back when the request's handler returns, the decoded values gone
// with it.
type bodyBudget struct{ *memoryBudget }

func newBodyBudget(limit, share int64, wait time.Duration) *bodyBudget {
	return &bodyBudget{newMemoryBudget("request body", limit, share, wait)}
}

// body takes client's bytes for a body of length bytes (-1: unknown) and
// returns it counted against the budget, with the function that gives its
// bytes back. The caller has refused lengths over MaxBodyBytes, which the
// budget and every share are at least.
func (b *bodyBudget) body(ctx context.Context, client string, r io.ReadCloser, length int64) (io.ReadCloser, func(), error) {
	if length >= 0 {
		if err := b.take(ctx, client, length); err != nil {
			return nil, nil, err
		}
		return r, func() { b.give(client, length) }, nil
	}
	cb := &chunkedBody{ReadCloser: r, ctx: ctx, client: client, budget: b}
	return cb, func() { b.give(client, cb.held) }, nil
}

// decoded takes n bytes more of client's share and of the budget for a
// request that holds held bytes of body, for what its body takes once
// decoded (cost.go): a body's values can take many times its bytes, and
// they are held until the handler returns as the body is. EUNAVAILABLE as
// take; ETOOLARGE if the two are more than the client's share or the whole
// budget, which no wait would free. Give them back with give.
func (b *bodyBudget) decoded(ctx context.Context, client string, held, n int64) error {
	if limit := b.most(); held+n > limit {
		return saver.Errorf(saver.ETOOLARGE, "Request body would take %d bytes once decoded, with its %d bytes over the limit of %d request body bytes in memory; send fewer elements per request.", n, held, limit)
	}
	return b.take(ctx, client, n)
}

// chunkedBody takes each read's bytes from the budget.
type chunkedBody struct {
	io.ReadCloser
	ctx    context.Context
	client string
	budget *bodyBudget
	held   int64
}

func (c *chunkedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n == 0 {
		return n, err
	}
	if err := c.budget.take(c.ctx, c.client, int64(n)); err != nil {
		return n, err
	}
	c.held += int64(n)
	return n, err
}
