package embedded_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// MustOpen opens the store at path, quietly, and closes it at cleanup.
func MustOpen(tb testing.TB, path string, opts ...embedded.Option) *embedded.Store {
	tb.Helper()
	s, err := embedded.Open(path, append([]embedded.Option{embedded.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// engines are the engines every contract runs on: Pebble, under new stores,
// and bbolt, under stores made before it.
var engines = []string{embedded.EnginePebble, embedded.EngineBolt}

// eachEngine runs fn once per engine, with an open that makes a new store
// on it.
func eachEngine(t *testing.T, fn func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) {
			fn(t, func(tb testing.TB, opts ...embedded.Option) *embedded.Store {
				return MustOpen(tb, filepath.Join(tb.TempDir(), "saver.db"), append([]embedded.Option{embedded.WithEngine(e)}, opts...)...)
			})
		})
	}
}

func TestStore(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		privateAndShared(t, open, storetest.Run, func(s *embedded.Store) saver.Store { return s })
	})
}

func TestTree(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		privateAndShared(t, open, storetest.RunTree, func(s *embedded.Store) storetest.TreeStore { return s })
	})
}

// privateAndShared runs a contract with a store for every subtest, then
// with one store for all of them, as a shared DynamoDB table would be.
func privateAndShared[S any](t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store,
	run func(*testing.T, func(*testing.T) S), as func(*embedded.Store) S) {
	t.Run("Private", func(t *testing.T) {
		run(t, func(t *testing.T) S { return as(open(t)) })
	})
	t.Run("Shared", func(t *testing.T) {
		shared := as(open(t))
		run(t, func(*testing.T) S { return shared })
	})
}

// TestLedger gives every subtest a store of its own: a store has one clock,
// and each subtest drives its own.
func TestLedger(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		storetest.RunLedger(t, func(t *testing.T, now func() time.Time) storetest.LedgerStore {
			return open(t, embedded.WithNow(now))
		})
	})
}

func TestOpenCreatesParentDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "saver.db")
	s := MustOpen(t, path)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("file not created: %v", err)
	}
}

func TestOpenLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saver.db")
	MustOpen(t, path)
	s, err := embedded.Open(path, embedded.WithTimeout(50*time.Millisecond), embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err == nil {
		s.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
}

func TestClosedStore(t *testing.T) {
	s, err := embedded.Open(filepath.Join(t.TempDir(), "saver.db"), embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v, want nil as bbolt gives", err)
	}
	ref := storetest.NewRef()
	tests := []struct {
		name string
		call func() error
	}{
		{"Ping", func() error { return s.Ping(t.Context()) }},
		{"PutCheckpoint", func() error { return s.PutCheckpoint(t.Context(), storetest.NewCheckpoint(ref, "1")) }},
		{"GetTuple", func() error { _, err := s.GetTuple(t.Context(), ref); return err }},
		{"ListCheckpoints", func() error {
			_, err := s.ListCheckpoints(t.Context(), saver.ListFilter{Tenant: ref.Tenant})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := saver.ErrorCode(tt.call()), saver.EUNAVAILABLE; got != want {
				t.Fatalf("error code = %q, want %q", got, want)
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	s := MustOpen(t, filepath.Join(t.TempDir(), "saver.db"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ref := storetest.NewRef()
	if err := s.PutCheckpoint(ctx, storetest.NewCheckpoint(ref, "1")); err == nil {
		t.Fatal("PutCheckpoint with a cancelled context succeeded")
	}
	storetest.MustNotFind(t, s, ref)
}

// TestExpiry gives every subtest a store of its own, as TestLedger does.
func TestExpiry(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		storetest.RunExpiry(t, func(t *testing.T, now func() time.Time) storetest.ExpiryStore {
			return open(t, embedded.WithNow(now))
		})
	})
}

func TestHeadGuard(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		t.Run("Private", func(t *testing.T) {
			storetest.RunHeadGuard(t, func(t *testing.T) saver.Store { return open(t) })
		})
		t.Run("Shared", func(t *testing.T) {
			shared := open(t)
			storetest.RunHeadGuard(t, func(t *testing.T) saver.Store { return shared })
		})
	})
}
