package embedded

import (
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// walEstimate is what roomFor takes for Pebble's live log bytes: Metrics'
// figure, read again only once a flush or a log's deletion may have made it
// smaller, plus what commits wrote since. Metrics computes every figure of
// the store under its lock: read at each commit, it took about 6% of a
// put's CPU in a profile (BenchmarkPutItem10k).
//
// Pebble calls shrank from its event listener with the DB's mutex held,
// and Metrics takes that mutex: so shrank takes no lock, and bytes never
// holds mu across Metrics (holding it there deadlocked a commit against a
// flush's end).
type walEstimate struct {
	gen atomic.Uint64 // moved on by shrank: a reading older than it is stale
	// reading lets one caller at a time read Metrics, so that each takes
	// off since only what it read before (Ping may ask while a commit does).
	reading sync.Mutex

	mu    sync.Mutex
	fresh bool   // base was read at generation at
	at    uint64 // the generation base was read at
	base  uint64 // Metrics().WAL.Size when last read
	since uint64 // bytes committed since, with their log records' headers
}

func newWALEstimate() *walEstimate { return &walEstimate{} }

// shrank marks the figure to be read again: a flush ended or a log was
// deleted.
func (w *walEstimate) shrank() { w.gen.Add(1) }

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
// more (headers counted at their largest, and commits that ended while
// Metrics was read counted twice, the safe side).
func (w *walEstimate) bytes(db *pebble.DB) uint64 {
	g := w.gen.Load()
	w.mu.Lock()
	if w.fresh && w.at == g {
		n := w.base + w.since
		w.mu.Unlock()
		return n
	}
	w.mu.Unlock()
	w.reading.Lock()
	defer w.reading.Unlock()
	g = w.gen.Load()
	w.mu.Lock()
	since := w.since
	w.mu.Unlock()
	size := db.Metrics().WAL.Size
	w.mu.Lock()
	defer w.mu.Unlock()
	w.since -= since
	if w.gen.Load() != g {
		// Another flush ended meanwhile: this reading may already be
		// larger than the log, so it serves this call only.
		w.fresh = false
		return size + w.since
	}
	w.base, w.at, w.fresh = size, g, true
	return w.base + w.since
}
