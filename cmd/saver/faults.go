package main

// TEST ONLY. Fault injection for the reliability tests (e2e/test_faults.py):
//
//	SAVER_FAULTS=dynamodb:throttle=0.3      answer 30% of DynamoDB requests with ThrottlingException
//	SAVER_FAULTS_STATS=/tmp/faults.json     where to keep the counts of requests and injected faults
//
// The spec's grammar is faults.Parse's. Both variables are deliberately left
// out of Config, the flags and the README: they make the service fail on
// purpose and must never be set in production. With them unset nothing
// changes. When set, the service logs a warning at start.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/saver-dev/saver/faults"
)

// Test-only environment variables.
const (
	envFaults      = "SAVER_FAULTS"
	envFaultsStats = "SAVER_FAULTS_STATS"
)

// faultsGetenv reads the test-only variables; tests replace it.
var faultsGetenv = os.Getenv

// injectFaults puts a faults.Transport in front of every AWS client built
// from cfg when SAVER_FAULTS is set, and does nothing otherwise.
func injectFaults(cfg *aws.Config, logger *slog.Logger) error {
	raw := faultsGetenv(envFaults)
	if raw == "" {
		return nil
	}
	spec, err := faults.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", envFaults, err)
	}
	base := http.RoundTripper(awshttp.NewBuildableClient().GetTransport())
	t := spec.Transport(base)
	if path := faultsGetenv(envFaultsStats); path != "" {
		w := &statsWriter{path: path}
		t.OnRequest(w.write)
	}
	cfg.HTTPClient = t.Client()
	logger.Warn("TEST-ONLY fault injection is on: AWS requests will fail on purpose; never set "+envFaults+" in production",
		"spec", raw, "stats", faultsGetenv(envFaultsStats))
	return nil
}

// statsWriter keeps the latest counts in a file, replaced atomically so that
// a test reading it never sees half of it.
type statsWriter struct {
	mu   sync.Mutex
	path string
	last int64 // requests counted in the file; an older snapshot is not written over it
}

func (w *statsWriter) write(s faults.Stats) {
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	var n int64
	for _, v := range s.Requests {
		n += v
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n < w.last {
		return
	}
	w.last = n
	tmp, err := os.CreateTemp(filepath.Dir(w.path), ".faults-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	if err := os.Rename(tmp.Name(), w.path); err != nil {
		os.Remove(tmp.Name())
	}
}
