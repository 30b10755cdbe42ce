package lincheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Keys of each kind per epoch: few, so that clients contend on them.
const (
	threadsPerEpoch = 3
	claimsPerEpoch  = 4
	itemsPerEpoch   = 4
)

// Load drives the service with concurrent clients, each doing, in a loop, one
// of: read a thread's head and put a checkpoint conditional on it; claim an
// idempotency key and, when granted, complete it (sometimes again, with the
// same result or another); get, put or delete a Store item. Every operation
// goes into History. The keys are those of the current epoch (NextEpoch):
// a test moves on to new keys before each fault, so that each key's history
// spans a fault and stays short enough to check.
type Load struct {
	History *History
	Clients int
	// Target returns the base URL the next request goes to (one of the
	// replicas).
	Target func() string
	// Timeout bounds a request; past it its outcome is unknown.
	Timeout time.Duration
	// Pad, when positive, is the size of the padding that every other
	// write carries (over the offload size, it goes to S3 on DynamoDB).
	Pad int

	epoch    atomic.Int64
	ids      atomic.Int64 // checkpoint ids and item values, unique in the run
	requests atomic.Int64 // requests of unknown outcome, reads included
	mu       sync.Mutex
	err      error
	failed   chan struct{} // closed with the first protocol error
}

// failedCh returns the channel closed at the first protocol error.
func (l *Load) failedCh() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = make(chan struct{})
	}
	return l.failed
}

// NextEpoch moves the clients on to new keys.
func (l *Load) NextEpoch() { l.epoch.Add(1) }

// Err is the first protocol error a client met (an answer the test cannot
// have caused with a fault), nil if none.
func (l *Load) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
		if l.failed == nil {
			l.failed = make(chan struct{})
		}
		close(l.failed)
	}
}

// Run runs the clients until ctx ends, and returns the first protocol error.
func (l *Load) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Requests in flight when the load stops run to their end: cut, their
	// outcome would be unknown for no fault.
	reqCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i := range l.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(l.Timeout, &l.requests)
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				if err := l.step(reqCtx, i, c, rng); err != nil {
					var p *errProtocol
					if errors.As(err, &p) {
						l.fail(err)
						cancel()
						return
					}
					if errors.Is(err, errNotSent) {
						// The service is down: poll until it is back.
						select {
						case <-ctx.Done():
						case <-time.After(10 * time.Millisecond):
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	return l.Err()
}

// WaitOps returns once the history holds n operations, or with the first
// protocol error, or ctx's error.
func (l *Load) WaitOps(ctx context.Context, n int) error {
	done := l.failedCh()
	for l.History.Len() < n {
		select {
		case <-done:
			return l.Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Failed is the number of requests of unknown outcome so far, reads
// included (a read that failed is left out of the history: it changed
// nothing).
func (l *Load) Failed() int { return int(l.requests.Load()) }

// WaitFelt returns once a fault in place has been felt: failed more
// requests of unknown outcome, reads included, or ops more operations
// recorded in all (a fault that only some operations meet, as S3's only
// the padded ones). Reads count because a fault that fails every request
// fails a head step at its read, which the history never sees.
func (l *Load) WaitFelt(ctx context.Context, failed, ops int) error {
	done := l.failedCh()
	f, n := l.Failed()+failed, l.History.Len()+ops
	for l.Failed() < f && l.History.Len() < n {
		select {
		case <-done:
			return l.Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (l *Load) nextID() int { return int(l.ids.Add(1)) }

func threadName(epoch int64, i int) string { return fmt.Sprintf("lin-e%d-t%d", epoch, i) }
func claimKey(epoch int64, i int) string   { return fmt.Sprintf("lin-e%d-k%d", epoch, i) }
func itemNS(epoch int64) []string          { return []string{"lin", fmt.Sprintf("e%d", epoch)} }
func itemKey(i int) string                 { return fmt.Sprintf("i%d", i) }

// record adds an operation ending now; unknown ones end at Infinity.
func (l *Load) record(kind string, client int, in, out any, call int64, known bool) {
	ret := int64(Infinity)
	if known {
		ret = l.History.Now()
	}
	l.History.Add(kind, client, in, out, call, ret)
}

func (l *Load) step(ctx context.Context, id int, c *client, rng *rand.Rand) error {
	epoch := l.epoch.Load()
	switch n := rng.IntN(100); {
	case n < 40:
		return l.headStep(ctx, id, c, rng, epoch)
	case n < 60:
		return l.ledgerStep(ctx, id, c, rng, epoch)
	default:
		return l.itemStep(ctx, id, c, rng, epoch)
	}
}

// headStep reads a thread's head, then puts a checkpoint conditional on it.
func (l *Load) headStep(ctx context.Context, id int, c *client, rng *rand.Rand, epoch int64) error {
	thread := threadName(epoch, rng.IntN(threadsPerEpoch))
	call := l.History.Now()
	head, ok, err := c.headGet(ctx, l.Target(), thread)
	if err != nil {
		return err
	}
	if !ok {
		return nil // a read of unknown outcome changed nothing
	}
	l.record(KindHead, id, HeadInput{Thread: thread, Read: true}, HeadOutput{Head: head}, call, true)
	cp := fmt.Sprintf("%012d", l.nextID())
	pad := 0
	if l.Pad > 0 && rng.IntN(2) == 0 {
		pad = l.Pad
	}
	call = l.History.Now()
	out, err := c.headPut(ctx, l.Target(), thread, head, cp, pad)
	if errors.Is(err, errNotSent) {
		return err
	}
	l.record(KindHead, id, HeadInput{Thread: thread, Expect: head, ID: cp}, HeadOutput{Outcome: out}, call, out != Unknown)
	return err
}

// ledgerStep claims a key and, when granted, completes it; sometimes it
// completes again, with the same result (accepted) or another (refused).
func (l *Load) ledgerStep(ctx context.Context, id int, c *client, rng *rand.Rand, epoch int64) error {
	key := claimKey(epoch, rng.IntN(claimsPerEpoch))
	call := l.History.Now()
	out, err := c.claim(ctx, l.Target(), key)
	if errors.Is(err, errNotSent) {
		return err
	}
	l.record(KindLedger, id, LedgerInput{Key: key}, out, call, out.Outcome != Unknown)
	if err != nil || out.State != "claimed" {
		return err
	}
	result := "r:" + out.Token
	for again := 0; again == 0 || rng.IntN(3) == 0; again++ {
		res := result
		if again > 0 && rng.IntN(2) == 0 {
			res = fmt.Sprintf("other:%d", l.nextID())
		}
		call = l.History.Now()
		o, err := c.complete(ctx, l.Target(), key, out.Token, res)
		if errors.Is(err, errNotSent) {
			return err
		}
		l.record(KindLedger, id, LedgerInput{Key: key, Complete: true, Token: out.Token, Result: res}, LedgerOutput{Outcome: o}, call, o != Unknown)
		if err != nil {
			return err
		}
	}
	return nil
}

// itemStep gets, puts or deletes a Store item.
func (l *Load) itemStep(ctx context.Context, id int, c *client, rng *rand.Rand, epoch int64) error {
	ns, key := itemNS(epoch), itemKey(rng.IntN(itemsPerEpoch))
	name := strings.Join(ns, ".") + "/" + key
	call := l.History.Now()
	switch n := rng.IntN(10); {
	case n < 5:
		v, ok, err := c.itemGet(ctx, l.Target(), ns, key)
		if err != nil || !ok {
			return err
		}
		l.record(KindItem, id, ItemInput{Key: name, Op: "get"}, ItemOutput{Value: v}, call, true)
		return nil
	case n < 9:
		val := &itemValue{V: l.nextID()}
		detail := ""
		if l.Pad > 0 && rng.IntN(2) == 0 {
			val.Pad = strings.Repeat("p", l.Pad)
			detail = fmt.Sprintf(" (%d B)", l.Pad)
		}
		out, err := c.itemPut(ctx, l.Target(), ns, key, val)
		if errors.Is(err, errNotSent) {
			return err
		}
		l.record(KindItem, id, ItemInput{Key: name, Op: "put", Value: val.V, Detail: detail}, ItemOutput{Outcome: out}, call, out != Unknown)
		return err
	default:
		out, err := c.itemPut(ctx, l.Target(), ns, key, nil)
		if errors.Is(err, errNotSent) {
			return err
		}
		l.record(KindItem, id, ItemInput{Key: name, Op: "delete"}, ItemOutput{Outcome: out}, call, out != Unknown)
		return err
	}
}

// ReadAll reads, once the load has stopped and the service is up, every
// key of every epoch so far: the head of each thread, a claim of each
// ledger key, each item. Recorded like any read, they check that what was
// acknowledged before the last fault is still there.
func (l *Load) ReadAll(ctx context.Context) error {
	c := newClient(l.Timeout, &l.requests)
	id := l.Clients
	for e := int64(0); e <= l.epoch.Load(); e++ {
		for i := range threadsPerEpoch {
			thread := threadName(e, i)
			call := l.History.Now()
			head, ok, err := c.headGet(ctx, l.Target(), thread)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("final read of %s failed", thread)
			}
			l.record(KindHead, id, HeadInput{Thread: thread, Read: true}, HeadOutput{Head: head}, call, true)
		}
		for i := range claimsPerEpoch {
			key := claimKey(e, i)
			call := l.History.Now()
			out, err := c.claim(ctx, l.Target(), key)
			if err != nil {
				return err
			}
			if out.Outcome == Unknown {
				return fmt.Errorf("final claim of %s failed", key)
			}
			l.record(KindLedger, id, LedgerInput{Key: key}, out, call, true)
		}
		for i := range itemsPerEpoch {
			ns, key := itemNS(e), itemKey(i)
			call := l.History.Now()
			v, ok, err := c.itemGet(ctx, l.Target(), ns, key)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("final get of %s failed", key)
			}
			l.record(KindItem, id, ItemInput{Key: strings.Join(ns, ".") + "/" + key, Op: "get"}, ItemOutput{Value: v}, call, true)
		}
	}
	return nil
}
