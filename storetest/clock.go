package storetest

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when a test advances it, so that ledger
// tests reach a lease's or a key's expiry without sleeping. Stores take it as
// their Now func() time.Time. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock set to the current time, in UTC, truncated to the
// second. Starting at the real time keeps expiry attributes realistic (a
// DynamoDB table's TTL reaper deletes items whose expiry has passed); whole
// seconds let a store keep times in epoch seconds or milliseconds and still
// give back exactly what the test computes.
func NewClock() *Clock {
	return &Clock{now: time.Now().UTC().Truncate(time.Second)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
