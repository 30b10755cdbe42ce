package ttl_test

import (
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/ttl"
)

var now = time.Unix(1_800_000_000, 0)

func TestExpiresAt(t *testing.T) {
	p := ttl.Policy{Default: saver.ScopeSession, Session: time.Hour, Persistent: 30 * 24 * time.Hour}
	forever := ttl.DefaultPolicy()
	tests := []struct {
		name  string
		p     ttl.Policy
		scope saver.Scope
		want  int64
	}{
		{"SessionExplicit", p, saver.ScopeSession, now.Unix() + 3600},
		{"DefaultScope", p, "", now.Unix() + 3600},
		{"Persistent", p, saver.ScopePersistent, now.Unix() + 30*86400},
		{"PersistentForever", forever, saver.ScopePersistent, 0},
		{"DefaultIsPersistentForever", forever, "", 0},
		{"SessionUnderDefaultPolicy", forever, saver.ScopeSession, now.Unix() + 12*3600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.ExpiresAt(tt.scope, now); got != tt.want {
				t.Fatalf("ExpiresAt=%d, want %d", got, tt.want)
			}
		})
	}
}

func TestRefresh(t *testing.T) {
	p := ttl.Policy{Default: saver.ScopeSession, Session: time.Hour, RefreshOnRead: true}
	tests := []struct {
		name      string
		p         ttl.Policy
		cp        saver.Checkpoint
		want      int64
		wantWrite bool
	}{
		{"FreshNoWrite", p, saver.Checkpoint{Scope: saver.ScopeSession, ExpiresAt: now.Unix() + 3000}, 0, false},
		{"SecondHalfRefreshes", p, saver.Checkpoint{Scope: saver.ScopeSession, ExpiresAt: now.Unix() + 1000}, now.Unix() + 3600, true},
		{"PinnedNeverRefreshed", p, saver.Checkpoint{Scope: saver.ScopeSession, ExpiresAt: 0}, 0, false},
		{"Off", ttl.Policy{Default: saver.ScopeSession, Session: time.Hour}, saver.Checkpoint{Scope: saver.ScopeSession, ExpiresAt: now.Unix() + 10}, 0, false},
		{"ScopeBecameForever", p, saver.Checkpoint{Scope: saver.ScopePersistent, ExpiresAt: now.Unix() + 10}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, write := tt.p.Refresh(&tt.cp, now)
			if got != tt.want || write != tt.wantWrite {
				t.Fatalf("Refresh=(%d,%v), want (%d,%v)", got, write, tt.want, tt.wantWrite)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		p    ttl.Policy
		ok   bool
	}{
		{"Default", ttl.DefaultPolicy(), true},
		{"BadScope", ttl.Policy{Default: "forever", Session: time.Hour}, false},
		{"TinySession", ttl.Policy{Default: saver.ScopeSession, Session: time.Second}, false},
		{"PersistentShorterThanSession", ttl.Policy{Default: saver.ScopeSession, Session: time.Hour, Persistent: time.Minute}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate()=%v, want ok=%v", err, tt.ok)
			}
		})
	}
}
