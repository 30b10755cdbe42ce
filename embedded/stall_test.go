package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/storetest"
)

// TestDeleteForRunsDoesNotHoldTheWriteLock puts another tenant's checkpoint
// from inside delete_for_runs's search for the runs' checkpoints: the search
// reads in a read transaction, so the put goes through. When the search ran
// inside the write transaction, the put waited for the whole search (2.6 s
// at 182,000 checkpoints), and here for the hook that waits for it.
func TestDeleteForRunsDoesNotHoldTheWriteLock(t *testing.T) {
	s := MustOpen(t, filepath.Join(t.TempDir(), "saver.db"))
	ref := storetest.NewRef()
	for i := range 10 {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%04d", i))
		in.Metadata["run_id"] = "run"
		storetest.MustPutCheckpoint(t, s, in)
	}
	other := storetest.NewRef()
	var putErr error
	s.SetScanHook(func() {
		done := make(chan error, 1)
		go func() {
			in := storetest.NewCheckpoint(other, "0001")
			if err := in.Validate(); err != nil {
				done <- err
				return
			}
			done <- s.PutCheckpoint(context.WithoutCancel(t.Context()), in)
		}()
		select {
		case putErr = <-done:
		case <-time.After(10 * time.Second):
			putErr = errors.New("the put waited 10 s for delete_for_runs")
		}
	})
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"run"}); err != nil {
		t.Fatalf("DeleteForRuns: %v", err)
	}
	if putErr != nil {
		t.Fatalf("a put during delete_for_runs's search: %v", putErr)
	}
	storetest.MustGetTuple(t, s, storetest.At(other, "0001"))
	if got := storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("left %v", storetest.IDs(got))
	}
}

// BenchmarkStall measures how long another tenant's puts wait while one
// tenant's large deletion or copy runs: delete_for_runs of a tenant's whole
// history, prune keep_latest, delete_thread and copy_thread of one long
// thread. It reports the slowest put and the call's own time.
func BenchmarkStall(b *testing.B) {
	const n = 20_000
	for _, op := range []string{"delete_for_runs", "prune", "delete_thread", "copy_thread"} {
		b.Run(op, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
				ref := putLongThread(b, s, n)
				b.StartTimer()
				var (
					wg   sync.WaitGroup
					done = make(chan struct{})
					lat  []time.Duration
				)
				wg.Go(func() {
					other := storetest.NewRef()
					for i := 0; ; i++ {
						select {
						case <-done:
							return
						default:
						}
						in := storetest.NewCheckpoint(other, fmt.Sprintf("%08d", i))
						start := time.Now()
						storetest.MustPutCheckpoint(b, s, in)
						lat = append(lat, time.Since(start))
					}
				})
				start := time.Now()
				var err error
				switch op {
				case "delete_for_runs":
					err = s.DeleteForRuns(b.Context(), ref.Tenant, []string{"run"})
				case "prune":
					err = s.Prune(b.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest)
				case "delete_thread":
					err = s.DeleteThread(b.Context(), ref.Tenant, ref.ThreadID)
				case "copy_thread":
					err = s.CopyThread(b.Context(), ref.Tenant, ref.ThreadID, ref.ThreadID+"-copy")
				}
				took := time.Since(start)
				close(done)
				wg.Wait()
				if err != nil && !errors.Is(err, context.Canceled) {
					b.Fatal(err)
				}
				b.ReportMetric(float64(took.Milliseconds()), "op-ms")
				b.ReportMetric(float64(slices.Max(lat).Microseconds())/1000, "max-put-ms")
				b.ReportMetric(float64(len(lat)), "puts")
			}
		})
	}
}
