package embedded

import (
	"fmt"
	"sync"
)

// groupCommit runs write functions in shared transactions without a timer.
// A write that finds no commit running commits at once, so a lone writer
// never waits; writes that arrive while a commit and its fsync run queue up
// and share the next one, so concurrent writers still pay one fsync between
// many. (bbolt's own Batch waits MaxBatchDelay before every commit, which
// made each lone put at least a millisecond slower.)
//
// The write that finds no commit running commits on its caller's
// goroutine: a goroutine started for each lone write grew its stack anew
// through the engine's calls on every commit (a tenth of a put's CPU in a
// profile). Writes queued meanwhile are committed by a goroutine it starts,
// so that its caller is answered once its own commit is done.
type groupCommit struct {
	db  engine
	max int // most calls in one transaction

	mu      sync.Mutex
	queue   []*pendingWrite
	running bool
}

type pendingWrite struct {
	fn   func(kvTx) error
	done chan error
}

// do runs fn in a write transaction, possibly shared, and returns once that
// transaction has committed or failed. fn may run more than once (see
// commit), so it must only touch the transaction.
func (g *groupCommit) do(fn func(kvTx) error) error {
	w := &pendingWrite{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	lead := !g.running
	g.running = true
	g.mu.Unlock()
	if lead {
		g.lead()
	}
	return <-w.done
}

// lead commits the first batch of the queue, which holds the caller's
// write (the queue is empty while no commit runs), and hands what queued
// meanwhile to a goroutine of its own.
func (g *groupCommit) lead() {
	defer func() {
		if r := recover(); r != nil {
			// The engine panicked (the writes' functions run under
			// safeRun). On a goroutine of its own that took the process
			// down; so it does here, rather than be answered as one
			// request's error while the writes queued behind it wait for
			// good and the store goes on in a state nothing vouches for.
			go panic(r)
			select {}
		}
	}()
	if g.next() {
		go g.loop()
	}
}

// loop commits what is queued, batch after batch, until the queue is empty.
func (g *groupCommit) loop() {
	for g.next() {
	}
}

// next commits up to max queued writes in one transaction and reports
// whether more are queued; when none are, no commit is running any more.
func (g *groupCommit) next() bool {
	g.mu.Lock()
	n := min(len(g.queue), g.max)
	batch := make([]*pendingWrite, n)
	copy(batch, g.queue)
	g.queue = append(g.queue[:0:0], g.queue[n:]...)
	g.mu.Unlock()
	g.commit(batch)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.running = false
		return false
	}
	return true
}

// commit runs a batch in one transaction. When a function fails the whole
// transaction rolls back and each function runs again in a transaction of
// its own, so every caller gets its own error and no failure undoes another
// caller's write.
func (g *groupCommit) commit(batch []*pendingWrite) {
	err := g.db.Update(func(tx kvTx) error {
		for _, w := range batch {
			if err := safeRun(w.fn, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	for _, w := range batch {
		w.done <- g.db.Update(func(tx kvTx) error { return safeRun(w.fn, tx) })
	}
}

// safeRun turns a panic in fn into an error: fn runs on the commit
// goroutine, where a panic would otherwise take the whole process down.
func safeRun(fn func(kvTx) error, tx kvTx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in write: %v", r)
		}
	}()
	return fn(tx)
}
