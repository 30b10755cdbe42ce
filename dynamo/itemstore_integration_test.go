//go:build integration

package dynamo_test

import (
	"testing"
	"time"

	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestItems runs the Store's item contract on the shared table and bucket,
// each subtest on a store value of its own driven by its clock.
func TestItems(t *testing.T) {
	st := localstack.MustStore(t)
	storetest.RunItems(t, func(t *testing.T, now func() time.Time) storetest.ItemStore {
		return withClock(st.Store, now)
	})
}

// TestItemsOffloadEverything runs the item contract with a threshold of
// zero, so that every value goes through S3.
func TestItemsOffloadEverything(t *testing.T) {
	st := localstack.MustStore(t)
	st.Store.OffloadThreshold = 0
	storetest.RunItems(t, func(t *testing.T, now func() time.Time) storetest.ItemStore {
		return withClock(st.Store, now)
	})
}
