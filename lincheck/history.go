package lincheck

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Infinity is the return time of an operation whose outcome is unknown: it
// may take effect at any time after its call, or never.
const Infinity = math.MaxInt64

// History records operations of every kind, their call and return times read
// from one monotonic clock. It is safe for concurrent use.
type History struct {
	start time.Time

	mu      sync.Mutex
	ops     map[string][]porcupine.Operation // by kind
	count   int
	unknown int
}

// NewHistory starts the clock.
func NewHistory() *History {
	return &History{start: time.Now(), ops: map[string][]porcupine.Operation{}}
}

// Now is the clock: nanoseconds since the history began, monotonic.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records an operation of kind; ret is Infinity when its outcome is
// unknown.
func (h *History) Add(kind string, client int, input, output any, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops[kind] = append(h.ops[kind], porcupine.Operation{ClientId: client, Input: input, Call: call, Output: output, Return: ret})
	h.count++
	if ret == Infinity {
		h.unknown++
	}
}

// Unknown is the number of operations of unknown outcome recorded.
func (h *History) Unknown() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unknown
}

// Len is the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// Stats counts operations by kind and the unknown ones among them.
type Stats struct {
	Ops, Unknown map[string]int
	// Refused counts the writes a condition refused: conditional puts
	// whose head had moved, completions by a token that no longer holds
	// its key or with another result. None would mean nothing contended.
	Refused int
}

func (s Stats) String() string {
	var total, unknown int
	for k, n := range s.Ops {
		total += n
		unknown += s.Unknown[k]
	}
	return fmt.Sprintf("%d operations (heads %d, ledger %d, items %d), %d refused by a condition, %d of unknown outcome",
		total, s.Ops[KindHead], s.Ops[KindLedger], s.Ops[KindItem], s.Refused, unknown)
}

// Stats returns the counts so far.
func (h *History) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Stats{Ops: map[string]int{}, Unknown: map[string]int{}}
	for k, ops := range h.ops {
		s.Ops[k] = len(ops)
		for _, op := range ops {
			if op.Return == Infinity {
				s.Unknown[k]++
			}
			switch out := op.Output.(type) {
			case HeadOutput:
				if out.Outcome == Refused {
					s.Refused++
				}
			case LedgerOutput:
				if out.Outcome == Refused {
					s.Refused++
				}
			}
		}
	}
	return s
}

// Models maps each kind to its model.
var Models = map[string]porcupine.Model{KindHead: HeadModel, KindLedger: LedgerModel, KindItem: ItemModel}

// Result is the check of one kind's operations.
type Result struct {
	Kind   string
	Ops    int
	Result porcupine.CheckResult
	Took   time.Duration
	// Visualization is the HTML file porcupine drew of the history when it
	// is not Ok ("" otherwise).
	Visualization string
}

// Check checks each kind's operations against its model with porcupine,
// each within timeout, and writes a visualisation of every history that is
// not linearizable (or not decided in time) into dir, named after name and
// the kind.
func (h *History) Check(timeout time.Duration, dir, name string) ([]Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Result
	for _, kind := range []string{KindHead, KindLedger, KindItem} {
		ops := h.ops[kind]
		if len(ops) == 0 {
			continue
		}
		model := Models[kind]
		start := time.Now()
		res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
		r := Result{Kind: kind, Ops: len(ops), Result: res, Took: time.Since(start)}
		if res != porcupine.Ok {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return out, err
			}
			r.Visualization = filepath.Join(dir, fmt.Sprintf("%s-%s.html", name, kind))
			if err := porcupine.VisualizePath(model, info, r.Visualization); err != nil {
				return out, fmt.Errorf("visualize %s: %w", kind, err)
			}
		}
		out = append(out, r)
	}
	return out, nil
}
