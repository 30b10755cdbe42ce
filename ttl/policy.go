// Package ttl turns a thread's retention scope into expiry times: the default
// scope, how long each scope lives, and when a read refreshes an expiry.
package ttl

import (
	"errors"
	"fmt"
	"time"

	"github.com/saver-dev/saver"
)

// Policy is the service's retention configuration.
type Policy struct {
	// Default is the scope of a thread whose client names none.
	Default saver.Scope
	// Session is how long a session thread's data lives after its last write.
	Session time.Duration
	// Persistent is how long a persistent thread's data lives; 0 is forever.
	Persistent time.Duration
	// RefreshOnRead extends a checkpoint's expiry when it is read in the
	// second half of its lifetime, so an active thread never expires.
	RefreshOnRead bool
}

// DefaultPolicy keeps data forever unless a client asks for a session scope,
// which lives 12 hours: losing a thread must be a choice, never a default.
func DefaultPolicy() Policy {
	return Policy{Default: saver.ScopePersistent, Session: 12 * time.Hour}
}

// Validate checks the policy.
func (p Policy) Validate() error {
	var errs []error
	if p.Default != saver.ScopeSession && p.Default != saver.ScopePersistent {
		errs = append(errs, fmt.Errorf("default scope %q: use session or persistent", p.Default))
	}
	if p.Session < time.Minute {
		errs = append(errs, fmt.Errorf("session ttl %s: must be at least 1m", p.Session))
	}
	if p.Persistent != 0 && p.Persistent < p.Session {
		errs = append(errs, fmt.Errorf("persistent ttl %s: must be 0 (forever) or at least the session ttl", p.Persistent))
	}
	return errors.Join(errs...)
}

// Resolve returns the scope to use: s, or the default when s is "".
func (p Policy) Resolve(s saver.Scope) saver.Scope {
	if s == "" {
		return p.Default
	}
	return s
}

// lifetime returns how long items of scope s live; 0 is forever.
func (p Policy) lifetime(s saver.Scope) time.Duration {
	if p.Resolve(s) == saver.ScopeSession {
		return p.Session
	}
	return p.Persistent
}

// ExpiresAt returns the expiry (epoch seconds, 0 = never) of an item of scope
// s written at now.
func (p Policy) ExpiresAt(s saver.Scope, now time.Time) int64 {
	d := p.lifetime(s)
	if d == 0 {
		return 0
	}
	return now.Add(d).Unix()
}

// Refresh says whether reading a checkpoint at now should extend its expiry,
// and to what. It refreshes only in the second half of the lifetime, so a busy
// thread costs one extra write per half-lifetime, not one per read.
func (p Policy) Refresh(cp *saver.Checkpoint, now time.Time) (int64, bool) {
	if !p.RefreshOnRead || cp.ExpiresAt == 0 {
		return 0, false
	}
	d := p.lifetime(cp.Scope)
	if d == 0 {
		return 0, true // the scope became forever: so does the checkpoint
	}
	if cp.ExpiresAt-now.Unix() > int64(d/time.Second)/2 {
		return 0, false
	}
	return now.Add(d).Unix(), true
}
