package api

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
)

// shares bounds what each client holds of a resource (body bytes, requests
// in flight, connections): one semaphore of limit per key, so that a client
// past its share waits on, or is refused by, its own holdings only. Keys
// come from clients (addresses are not a finite set), so an entry lives only
// while its key holds or waits for something: the map is bounded by what is
// held, never by how many clients have been seen.
type shares struct {
	limit int64
	mu    sync.Mutex
	byKey map[string]*share
}

type share struct {
	sem     *semaphore.Weighted
	held    int64
	waiters int
}

func newShares(limit int64) *shares {
	return &shares{limit: limit, byKey: map[string]*share{}}
}

// acquire takes n of key's share, waiting until ctx ends; n is at most the
// limit, or it could never be had.
func (s *shares) acquire(ctx context.Context, key string, n int64) error {
	sh := s.enter(key)
	err := sh.sem.Acquire(ctx, n)
	s.leave(key, sh, n, err == nil)
	return err
}

// tryAcquire takes n of key's share if it is free now.
func (s *shares) tryAcquire(key string, n int64) bool {
	sh := s.enter(key)
	ok := sh.sem.TryAcquire(n)
	s.leave(key, sh, n, ok)
	return ok
}

// release gives back n that key acquired.
func (s *shares) release(key string, n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.byKey[key]
	sh.sem.Release(n)
	sh.held -= n
	s.evict(key, sh)
}

// enter finds or makes key's entry and counts the caller as waiting on it,
// so that it is not evicted before the caller's acquire is through.
func (s *shares) enter(key string) *share {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.byKey[key]
	if sh == nil {
		sh = &share{sem: semaphore.NewWeighted(s.limit)}
		s.byKey[key] = sh
	}
	sh.waiters++
	return sh
}

func (s *shares) leave(key string, sh *share, n int64, took bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh.waiters--
	if took {
		sh.held += n
	}
	s.evict(key, sh)
}

func (s *shares) evict(key string, sh *share) {
	if sh.held == 0 && sh.waiters == 0 {
		delete(s.byKey, key)
	}
}

// len is the number of keys holding or waiting, for tests of boundedness.
func (s *shares) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}
