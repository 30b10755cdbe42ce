package storetest

import (
	"runtime"
	"sync"
)

// PeakHeapGrowth runs fn and returns how far the heap in use grew above
// what it held before, at its highest while fn ran (sampled as often as the
// scheduler allows): for tests that a store's work holds bounded memory
// whatever the size of the data it walks.
func PeakHeapGrowth(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var (
		peak = base
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return peak - base
}
