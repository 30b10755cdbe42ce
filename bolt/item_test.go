package bolt_test

import (
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/bolt"
	"github.com/saver-dev/saver/storetest"
)

func TestItems(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...bolt.Option) *bolt.Store) {
		storetest.RunItems(t, func(t *testing.T, now func() time.Time) storetest.ItemStore {
			return open(t, bolt.WithNow(now))
		})
	})
}

// TestSweepItems checks that a sweep deletes exactly the expired items: not
// one whose TTL a refresh restarted, nor one put again without a TTL.
func TestSweepItems(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...bolt.Option) *bolt.Store) {
		clock := storetest.NewClock()
		s := open(t, bolt.WithNow(clock.Now))
		tenant, ns := storetest.NewTenant(), saver.Namespace{"n"}
		var ops []saver.ItemOp
		for _, k := range []string{"expires", "refreshed", "put-again", "forever"} {
			p := storetest.Put(ns, k, `{}`)
			if k != "forever" {
				p.TTL = time.Minute
			}
			ops = append(ops, p)
		}
		storetest.MustBatch(t, s, tenant, ops...)
		clock.Advance(30 * time.Second)
		storetest.MustBatch(t, s, tenant,
			saver.GetOp{Namespace: ns, Key: "refreshed", RefreshTTL: true},
			storetest.Put(ns, "put-again", `{}`))
		clock.Advance(30 * time.Second)
		n, err := s.SweepItems(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("SweepItems deleted %d items, want 1", n)
		}
		for _, k := range []string{"refreshed", "put-again", "forever"} {
			if storetest.MustGet(t, s, tenant, ns, k) == nil {
				t.Fatalf("%s is gone after the sweep", k)
			}
		}
		clock.Advance(time.Minute)
		if n, err := s.SweepItems(t.Context()); err != nil || n != 1 {
			t.Fatalf("second SweepItems = %d, %v; want the refreshed item", n, err)
		}
		if n, err := s.SweepItems(t.Context()); err != nil || n != 0 {
			t.Fatalf("third SweepItems = %d, %v; want nothing left", n, err)
		}
	})
}
