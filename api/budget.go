package api

import (
	"context"
	"fmt"
	"io"
	"sync"
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
	wctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	if b.shares != nil && !b.shares.tryAcquire(client, n) && b.shares.acquire(wctx, client, n) != nil {
		return b.refused(ctx, "Your requests hold their share of %d %s bytes in memory; retry once some are answered.", b.shares.limit)
	}
	if !b.sem.TryAcquire(n) && b.sem.Acquire(wctx, n) != nil {
		b.giveShare(client, n)
		return b.refused(ctx, "The service holds its limit of %d %s bytes in memory; retry.", b.limit)
	}
	return nil
}

// refused is the error of a take that did not get its bytes: the request's
// own end (its deadline, or its client gone) when that is why, else
// EUNAVAILABLE with the message of format, which names a limit and what.
func (b *memoryBudget) refused(ctx context.Context, format string, limit int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("api: waiting for %s bytes: %w", b.what, err)
	}
	return saver.Errorf(saver.EUNAVAILABLE, format, limit, b.what)
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

// body counts a body of length bytes (-1: unknown) in h, h's budget being
// b: a declared length at once, before it is read, a chunked body as its
// bytes arrive. The caller has refused lengths over MaxBodyBytes, which the
// budget and every share are at least.
func (b *bodyBudget) body(ctx context.Context, h *holding, r io.ReadCloser, length int64) (io.ReadCloser, error) {
	if length >= 0 {
		if err := h.Take(ctx, length); err != nil {
			return nil, err
		}
		return r, nil
	}
	return &chunkedBody{ReadCloser: r, ctx: ctx, holding: h}, nil
}

// chunkedBody takes each read's bytes from its request's holding.
type chunkedBody struct {
	io.ReadCloser
	ctx     context.Context
	holding *holding
}

func (c *chunkedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n == 0 {
		return n, err
	}
	if err := c.holding.Take(c.ctx, int64(n)); err != nil {
		return n, err
	}
	return n, err
}

// holding is what one request holds of a memory budget, given back at once
// when the request is answered (release). As a saver.Budget it is what a
// store charges for an answer.
type holding struct {
	budget *memoryBudget
	client string
	// tooLarge is the message of an ETOOLARGE, given the bytes one request
	// may hold.
	tooLarge string
	mu       sync.Mutex
	held     int64
}

// overShare is the ETOOLARGE of a request that would hold more than its
// client may: no wait frees it, and a smaller request might fit.
type overShare struct{ err *saver.Error }

func (e overShare) Error() string { return e.err.Error() }
func (e overShare) Unwrap() error { return e.err }

// Take counts n more bytes: ETOOLARGE (an overShare) if the request would
// hold more than its client's share or the whole budget, EUNAVAILABLE if
// others hold them for longer than the budget's wait.
func (h *holding) Take(ctx context.Context, n int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if most := h.budget.most(); h.held+n > most {
		return overShare{saver.Errorf(saver.ETOOLARGE, h.tooLarge, h.held+n, most)}
	}
	if err := h.budget.take(ctx, h.client, n); err != nil {
		return err
	}
	h.held += n
	return nil
}

// release gives back everything the request holds.
func (h *holding) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.budget.give(h.client, h.held)
	h.held = 0
}
