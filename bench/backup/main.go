// Command backup measures saver backup on the embedded store: how long a
// backup of a store of -size takes from the running service, and what it
// costs writers: the put latency (p50, p99) of -writers clients putting
// checkpoints while no backup runs and while one does.
//
//	make build && go run ./bench/backup -saver bin/saver -size 1073741824
//
// The store is filled once at -db (kept; filled again only if absent) by
// this program through the store's Go API, then served by the binary.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
)

func main() {
	bin := flag.String("saver", "bin/saver", "the saver binary")
	work := flag.String("dir", filepath.Join(os.TempDir(), "saver-backup-bench"), "working folder: the store, backups")
	size := flag.Int64("size", 1<<30, "bytes of checkpoints the store holds")
	writers := flag.Int("writers", 4, "clients putting checkpoints during the measurement")
	window := flag.Duration("baseline", 10*time.Second, "how long writers are measured with no backup")
	rounds := flag.Int("rounds", 3, "backups to run")
	flag.Parse()

	db := filepath.Join(*work, "saver.db")
	if _, err := os.Stat(db); err != nil {
		if err := fill(db, *size); err != nil {
			log.Fatal(err)
		}
	}
	base, stop, err := serve(*bin, *work, db)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	var mu sync.Mutex
	type sample struct {
		at time.Time
		d  time.Duration
	}
	var samples []sample
	var done atomic.Bool
	var wg sync.WaitGroup
	for w := range *writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !done.Load(); n++ {
				start := time.Now()
				if err := put(base, fmt.Sprintf("bench-%d", w), fmt.Sprintf("%08d", n), 4<<10); err != nil {
					log.Fatal(err)
				}
				mu.Lock()
				samples = append(samples, sample{start, time.Since(start)})
				mu.Unlock()
			}
		}()
	}
	pct := func(from, to time.Time) (int, time.Duration, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		var ds []time.Duration
		for _, s := range samples {
			if !s.at.Before(from) && s.at.Before(to) {
				ds = append(ds, s.d)
			}
		}
		slices.Sort(ds)
		if len(ds) == 0 {
			return 0, 0, 0
		}
		return len(ds), ds[len(ds)/2], ds[len(ds)*99/100]
	}

	for r := range *rounds {
		from := time.Now()
		time.Sleep(*window)
		n, p50, p99 := pct(from, time.Now())
		fmt.Printf("round %d, no backup:     %6d puts, p50 %v, p99 %v\n", r+1, n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
		dest := filepath.Join(*work, fmt.Sprintf("backup-%d", r))
		os.RemoveAll(dest)
		from = time.Now()
		out, err := exec.Command(*bin, "backup", "-url", base, "-operator-key-file", filepath.Join(*work, "operator"), dest).CombinedOutput()
		to := time.Now()
		if err != nil {
			log.Fatalf("saver backup: %v\n%s", err, out)
		}
		os.RemoveAll(dest)
		n, p50, p99 = pct(from, to)
		fmt.Printf("round %d, during backup: %6d puts, p50 %v, p99 %v; %s\n", r+1, n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), strings.TrimSpace(string(out)))
	}
	done.Store(true)
	wg.Wait()
}

// fill makes a store at db holding size bytes of checkpoints, each with a
// 256 KiB channel value of random bytes, through the store's API.
func fill(db string, size int64) error {
	st, err := embedded.Open(db, embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	defer st.Close()
	const value = 256 << 10
	n := int(size / value)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := make([]byte, value)
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				rand.Read(data)
				id := fmt.Sprintf("%08d", i)
				err := st.PutCheckpoint(context.Background(), saver.PutCheckpoint{
					Checkpoint: saver.Checkpoint{
						CheckpointRef:   saver.CheckpointRef{Tenant: "default", ThreadID: fmt.Sprintf("fill-%d", i%64), ID: id},
						Body:            saver.Typed{Type: "msgpack", Data: []byte("checkpoint " + id)},
						Metadata:        saver.Metadata{"source": "loop", "step": int64(i)},
						ChannelVersions: map[string]string{"messages": id},
					},
					Blobs: []saver.Blob{{Channel: "messages", Version: id, Value: saver.Typed{Type: "msgpack", Data: data}}},
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	fmt.Printf("filled %s with %d checkpoints of %d KiB in %s\n", db, n, value>>10, time.Since(start).Round(time.Second))
	return nil
}

// serve starts the binary on db with an operator key and returns its URL.
func serve(bin, work, db string) (string, func(), error) {
	key := filepath.Join(work, "operator")
	if err := os.WriteFile(key, []byte(rand.Text()+"\n"), 0o600); err != nil {
		return "", nil, err
	}
	addrFile := filepath.Join(work, "addr")
	os.Remove(addrFile)
	cmd := exec.Command(bin, "serve", "-addr", "127.0.0.1:0", "-addr-file", addrFile, "-db", db,
		"-operator-key-file", key, "-log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(addrFile); err == nil {
			return "http://" + strings.TrimSpace(string(b)), stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("%s did not start within a minute", bin)
}

// put puts checkpoint id in thread with a channel value of size bytes, as
// the Python client's JSON would.
func put(base, thread, id string, size int) error {
	b, _ := json.Marshal(map[string]any{
		"checkpoint_ns": "", "checkpoint_id": id, "parent_checkpoint_id": "",
		"checkpoint":       map[string]any{"type": "msgpack", "data": []byte("checkpoint " + id)},
		"metadata":         map[string]any{"source": "loop", "step": 1},
		"channel_versions": map[string]string{"messages": id},
		"blobs": []map[string]any{{"channel": "messages", "version": id,
			"value": map[string]any{"type": "msgpack", "data": bytes.Repeat([]byte("x"), size)}}},
	})
	resp, err := http.Post(base+"/v1/threads/"+thread+"/checkpoints", "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("put %s/%s: %d", thread, id, resp.StatusCode)
	}
	return nil
}
