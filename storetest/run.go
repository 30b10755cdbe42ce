package storetest

import (
	"testing"
	"time"
)

// storeTest is one subtest of a contract: it gets a store and owns the
// tenants and threads it creates in it.
type storeTest[S any] struct {
	name string
	run  func(t *testing.T, s S)
}

// clockTest is one subtest of a contract whose store reads the time from
// clock, which only the test moves.
type clockTest[S any] struct {
	name string
	run  func(t *testing.T, s S, clock *Clock)
}

// group is a named list of subtests.
type group[T any] struct {
	name  string
	tests []T
}

// runStoreTests runs tests in parallel, each on the store open returns.
func runStoreTests[S any](t *testing.T, tests []storeTest[S], open func(t *testing.T) S) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, open(t))
		})
	}
}

// runStoreGroups runs each group's tests as runStoreTests does.
func runStoreGroups[S any](t *testing.T, groups []group[storeTest[S]], open func(t *testing.T) S) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { runStoreTests(t, g.tests, open) })
	}
}

// runClockGroups runs each group's tests in parallel, each with a clock of
// its own and the store open returns for that clock.
func runClockGroups[S any](t *testing.T, groups []group[clockTest[S]], open func(t *testing.T, now func() time.Time) S) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tt := range g.tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					clock := NewClock()
					tt.run(t, open(t, clock.Now), clock)
				})
			}
		})
	}
}
