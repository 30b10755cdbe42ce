package api

import (
	"context"
	"testing"
	"time"
)

// TestShares_Bounded: keys come from clients, addresses among them, so an
// entry must not outlive what its key holds or waits for; otherwise every
// address that ever connected would stay in memory.
func TestShares_Bounded(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *shares)
	}{
		{"Released", func(t *testing.T, s *shares) {
			for _, key := range []string{"a", "b", "c"} {
				if !s.tryAcquire(key, 2) {
					t.Fatalf("%s: its share is free", key)
				}
			}
			if got, want := s.len(), 3; got != want {
				t.Fatalf("len=%d while held, want %d", got, want)
			}
			for _, key := range []string{"a", "b", "c"} {
				s.release(key, 2)
			}
		}},
		{"RefusedAtOnce", func(t *testing.T, s *shares) {
			if s.tryAcquire("a", 3) {
				t.Fatal("3 of a share of 2 was given")
			}
		}},
		{"WaitedInVain", func(t *testing.T, s *shares) {
			if !s.tryAcquire("a", 2) {
				t.Fatal("a's share is free")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			if s.acquire(ctx, "a", 1) == nil {
				t.Fatal("a took more than its share")
			}
			if !s.tryAcquire("b", 2) { // another key's share is its own
				t.Fatal("b's share is free")
			}
			s.release("a", 2)
			s.release("b", 2)
		}},
		{"ReleasedNothing", func(t *testing.T, s *shares) { s.release("a", 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShares(2)
			tt.run(t, s)
			if got := s.len(); got != 0 {
				t.Fatalf("%d keys kept holding nothing, want 0", got)
			}
		})
	}
}
