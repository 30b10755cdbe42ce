package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// runMainEnv, when set, makes the test binary run main itself, so that a
// test can run the service as a process and see its exit status and output.
const runMainEnv = "SAVER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runProcess runs the binary with args until it exits or timeout passes,
// and returns its exit code (-1 if it was still running) and its output.
func runProcess(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return -1, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String()
}

// TestProcessRefusesADamagedStore starts the service on store files that
// are not stores: it must exit non-zero at once with a message naming the
// file and what to do, not serve an empty store in their place (which it
// did with an empty file, answering /readyz ok with all data gone), and
// not crash with a stack dump (which it did with a cut or damaged file).
func TestProcessRefusesADamagedStore(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.db")
	// A bbolt file: the damage below is to that file's pages. (A new store
	// is a Pebble directory, which Pebble checks with its own checksums.)
	s, err := embedded.Open(good, embedded.WithLogger(slog.New(slog.DiscardHandler)), embedded.WithEngine(embedded.EngineBolt))
	if err != nil {
		t.Fatal(err)
	}
	ref := storetest.NewRef()
	for i := range 200 {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
		in.Body = storetest.Typed(strings.Repeat("b", 1024))
		storetest.MustPutCheckpoint(t, s, in)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(good, 0, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root, used int
	db.View(func(tx *bbolt.Tx) error {
		root = int(tx.Bucket([]byte("checkpoints")).Root())
		used = int(tx.Size()) // the pages in use: the file grows ahead of them
		return nil
	})
	pageSize := db.Info().PageSize
	db.Close()
	garbled := bytes.Clone(data)
	for i := root * pageSize; i < (root+1)*pageSize; i++ {
		garbled[i] = byte(i * 7)
	}

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"Empty", nil, "the file is empty (0 bytes)"},
		{"CutShort", data[:used/2], "it was cut short"},
		{"Garbled", garbled, "the file is damaged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "saver.db")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := runProcess(t, 30*time.Second, "serve", "-addr", "127.0.0.1:0", "-db", path)
			if code == -1 {
				t.Fatalf("still serving after 30s on a file that is not a store:\n%s", out)
			}
			if code == 0 {
				t.Fatalf("exit status 0:\n%s", out)
			}
			for _, want := range []string{"saver: embedded: open " + path + ": not a valid store", tt.want, "restore"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, crash := range []string{"panic", "goroutine ", "fatal error", "SIGSEGV"} {
				if strings.Contains(out, crash) {
					t.Errorf("output has %q, a crash:\n%s", crash, out)
				}
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, tt.data) {
				t.Errorf("the file changed (%d bytes before, %d after, %v)", len(tt.data), len(after), err)
			}
		})
	}
}
