package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRun_ServesThenStopsOnSignal runs the serve command as main does, with
// the signal context cancelled as SIGTERM would: it must serve, stop cleanly
// and release the store file.
func TestRun_ServesThenStopsOnSignal(t *testing.T) {
	dir := t.TempDir()
	addrFile, db := filepath.Join(dir, "addr"), filepath.Join(dir, "sub", "saver.db")
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-addr-file", addrFile, "-db", db},
			func(string) string { return "" }, io.Discard, logs)
	}()

	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" {
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no addr file after 10s\n%s", logs)
		}
		if b, err := os.ReadFile(addrFile); err == nil {
			addr = strings.TrimSpace(string(b))
		} else {
			time.Sleep(5 * time.Millisecond) // polling the file the server writes
		}
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz: %d", resp.StatusCode)
	}

	// The request above shows in the metrics, labelled by route, not path.
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`saver_http_requests_total{method="GET",route="/readyz",status="200"} 1`,
		`saver_http_request_duration_seconds_count{method="GET",route="/readyz"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("metrics lack %q:\n%s", want, b)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(logs.String(), "saver stopped") {
		t.Fatalf("no shutdown log:\n%s", logs)
	}
	// The store file is closed: a second server can open it at once.
	m := NewMain(io.Discard)
	if err := m.ParseFlags([]string{"-addr", "127.0.0.1:0", "-db", db}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRun_UnknownCommand(t *testing.T) {
	err := run(context.Background(), []string{"frobnicate"}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("err=%v", err)
	}
}

func TestGC_Embedded(t *testing.T) {
	var out bytes.Buffer
	db := filepath.Join(t.TempDir(), "s.db")
	if err := run(context.Background(), []string{"gc", "-db", db}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "expired items deleted 0") {
		t.Fatalf("gc printed %q", out.String())
	}
	if err := run(context.Background(), []string{"init", "-db", db}, func(string) string { return "" }, &out, io.Discard); err == nil {
		t.Fatal("init on the embedded store should say it is for dynamodb")
	}
}

// TestMigrate_Bolt moves a bbolt file to Pebble with `saver migrate` and
// serves it: the checkpoint put before is there.
func TestMigrate_Bolt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	st, err := embedded.Open(db, embedded.WithEngine(embedded.EngineBolt), embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ref := storetest.NewRef()
	ref.Tenant = api.DefaultTenant
	storetest.MustPutCheckpoint(t, st, storetest.NewCheckpoint(ref, "0001"))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "-db", db}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "keys moved to Pebble") {
		t.Fatalf("migrate printed %q", out.String())
	}
	st, err = embedded.Open(db, embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.MustGetTuple(t, st, storetest.At(ref, "0001"))
}
