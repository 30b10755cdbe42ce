package bolt

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// walEstimate is what roomFor takes for Pebble's live log bytes: Metrics'
// figure, read again only once a flush or a log's deletion may have made it
// smaller, plus what commits wrote since. Metrics computes every figure of
// the store under its lock: read at each commit, it took about 6% of a
// put's CPU in a profile (BenchmarkPutItem10k).
type walEstimate struct {
	mu    sync.Mutex
	stale bool   // base is to be read again
	base  uint64 // Metrics().WAL.Size when last read
	since uint64 // bytes committed since, with their log records' headers
}

func newWALEstimate() *walEstimate { return &walEstimate{stale: true} }

// shrank marks the figure to be read again: a flush ended or a log was
// deleted.
func (w *walEstimate) shrank() {
	w.mu.Lock()
	w.stale = true
	w.mu.Unlock()
}

// committed counts a commit of n bytes, and the headers of the log records
// that hold it: up to 19 bytes for each 32 KB block it spans, and for the
// one it may start a block early for (the rest of a block too small for a
// header is padding).
func (w *walEstimate) committed(n uint64) {
	w.mu.Lock()
	w.since += n + 19*(n/(32<<10)+2)
	w.mu.Unlock()
}

// bytes returns the live log bytes: what Metrics would say, or a little
// more (headers counted at their largest).
func (w *walEstimate) bytes(db *pebble.DB) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale {
		w.stale = false
		w.base, w.since = db.Metrics().WAL.Size, 0
	}
	return w.base + w.since
}
