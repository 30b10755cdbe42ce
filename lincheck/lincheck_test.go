package lincheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// binDir holds the binaries the tests build, removed when they end.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lincheck-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// binary builds the service with tags once per run of the tests.
func binary(t *testing.T, tags ...string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := strings.Join(tags, ",")
	if bin, ok := built[key]; ok {
		return bin
	}
	bin, err := Build(t.Context(), "..", binDir, tags...)
	if err != nil {
		t.Fatal(err)
	}
	built[key] = bin
	return bin
}

// sizes are the run's sizes: short by default (make test), long from make
// soak through the environment.
type sizes struct {
	Clients int           // concurrent clients
	Faults  int           // faults injected (kills, stops, ...)
	Ops     int           // operations between two faults
	Timeout time.Duration // per request: past it the outcome is unknown
	Check   time.Duration // porcupine's time per kind
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

func runSizes(t *testing.T) sizes {
	return sizes{
		Clients: envInt(t, "SAVER_LIN_CLIENTS", 8),
		Faults:  envInt(t, "SAVER_LIN_FAULTS", 4),
		Ops:     envInt(t, "SAVER_LIN_OPS", 1000),
		Timeout: time.Duration(envInt(t, "SAVER_LIN_TIMEOUT_S", 10)) * time.Second,
		Check:   time.Duration(envInt(t, "SAVER_LIN_CHECK_S", 60)) * time.Second,
	}
}

// visualDir is where porcupine's drawings of failed histories go.
func visualDir() string {
	if d := os.Getenv("SAVER_LIN_OUT"); d != "" {
		return d
	}
	return filepath.Join("..", ".cache", "lincheck")
}

// check checks h and returns each kind's result; it fails t on a history
// porcupine could not check.
func check(t *testing.T, h *History, name string, timeout time.Duration) map[string]Result {
	t.Helper()
	results, err := h.Check(timeout, visualDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]Result{}
	for _, r := range results {
		byKind[r.Kind] = r
		t.Logf("LINCHECK %s: %s: %d operations, %s in %s", name, r.Kind, r.Ops, r.Result, r.Took.Round(time.Millisecond))
	}
	return byKind
}

// mustLinearizable fails t unless every kind's history is linearizable.
func mustLinearizable(t *testing.T, h *History, name string, timeout time.Duration) {
	t.Helper()
	for kind, r := range check(t, h, name, timeout) {
		switch r.Result {
		case porcupine.Ok:
		case porcupine.Unknown:
			t.Errorf("%s: porcupine did not decide in %s on %d operations (SAVER_LIN_CHECK_S); drawn in %s", kind, timeout, r.Ops, r.Visualization)
		default:
			t.Errorf("%s: NOT LINEARIZABLE: %d operations; the history and the longest linearization are drawn in %s", kind, r.Ops, r.Visualization)
		}
	}
	for _, kind := range []string{KindHead, KindLedger, KindItem} {
		if h.Stats().Ops[kind] == 0 {
			t.Errorf("no %s operations recorded", kind)
		}
	}
}

// runLoad runs l in the background and returns a function that stops it
// and returns its error.
func runLoad(ctx context.Context, l *Load) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}
