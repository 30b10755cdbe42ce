// Command loadgen drives the saver service alone, without Python: a closed
// loop of N workers on N keep-alive connections, each on its own thread,
// sending a mix of checkpoint puts, pending-write puts and latest-checkpoint
// gets, as a graph does. For each connection count it prints one JSON line:
// throughput, latency percentiles overall and per operation, errors.
//
//	loadgen -url http://127.0.0.1:7878 -conns 1,4,16,64 -duration 5s
//
// Every request goes to the given URL only (loopback in the benchmark); the
// run is bounded by -duration per level.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

type typed struct {
	Type string `msgpack:"type"`
	Data []byte `msgpack:"data"`
}

type blob struct {
	Channel string `msgpack:"channel"`
	Version string `msgpack:"version"`
	Value   typed  `msgpack:"value"`
}

type putCheckpoint struct {
	CheckpointNS       string            `msgpack:"checkpoint_ns"`
	CheckpointID       string            `msgpack:"checkpoint_id"`
	ParentCheckpointID string            `msgpack:"parent_checkpoint_id"`
	Checkpoint         typed             `msgpack:"checkpoint"`
	Metadata           map[string]any    `msgpack:"metadata"`
	ChannelVersions    map[string]string `msgpack:"channel_versions"`
	Blobs              []blob            `msgpack:"blobs"`
}

type write struct {
	TaskID   string `msgpack:"task_id"`
	TaskPath string `msgpack:"task_path"`
	Idx      int    `msgpack:"idx"`
	Channel  string `msgpack:"channel"`
	Value    typed  `msgpack:"value"`
}

type putWrites struct {
	CheckpointNS string  `msgpack:"checkpoint_ns"`
	CheckpointID string  `msgpack:"checkpoint_id"`
	Writes       []write `msgpack:"writes"`
}

// Result is one connection level's figures.
type Result struct {
	Conns     int                `json:"conns"`
	Seconds   float64            `json:"seconds"`
	Ops       int                `json:"ops"`
	Errors    int                `json:"errors"`
	OpsPerSec float64            `json:"ops_per_sec"`
	P50ms     float64            `json:"p50_ms"`
	P99ms     float64            `json:"p99_ms"`
	ByOp      map[string]opStats `json:"by_op"`
	FirstErr  string             `json:"first_error,omitempty"`
}

type opStats struct {
	Ops   int     `json:"ops"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
}

type sample struct {
	op string
	d  time.Duration
}

type mix struct{ put, writes, get int }

func (m mix) pick(r *rand.Rand) string {
	n := r.IntN(m.put + m.writes + m.get)
	switch {
	case n < m.put:
		return "put"
	case n < m.put+m.writes:
		return "put_writes"
	default:
		return "get"
	}
}

func parseMix(s string) (mix, error) {
	var m mix
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return m, fmt.Errorf("bad mix entry %q", part)
		}
		switch k {
		case "put":
			m.put = n
		case "writes":
			m.writes = n
		case "get":
			m.get = n
		default:
			return m, fmt.Errorf("unknown operation %q in mix", k)
		}
	}
	if m.put+m.writes+m.get == 0 || m.put == 0 {
		return m, fmt.Errorf("mix needs puts")
	}
	return m, nil
}

func main() {
	base := flag.String("url", "", "service base URL (loopback)")
	connsFlag := flag.String("conns", "1,4,16,64", "connection counts, one level each")
	duration := flag.Duration("duration", 5*time.Second, "measured time per level")
	warmup := flag.Duration("warmup", time.Second, "unmeasured time before each level")
	mixFlag := flag.String("mix", "put=40,writes=10,get=50", "operation weights")
	blobBytes := flag.Int("blob-bytes", 2048, "bytes of the channel value each put adds")
	flag.Parse()
	m, err := parseMix(*mixFlag)
	if err != nil || *base == "" {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		flag.Usage()
		os.Exit(2)
	}
	var levels []int
	for part := range strings.SplitSeq(*connsFlag, ",") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 || n > 1024 {
			fmt.Fprintf(os.Stderr, "loadgen: bad connection count %q\n", part)
			os.Exit(2)
		}
		levels = append(levels, n)
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	enc := json.NewEncoder(os.Stdout)
	for _, n := range levels {
		res := level(strings.TrimRight(*base, "/"), fmt.Sprintf("lg-%s-%d", run, n), n, m, *blobBytes, *warmup, *duration)
		enc.Encode(res)
	}
}

// level runs n workers for warmup+duration and reports the measured part.
func level(base, prefix string, n int, m mix, blobBytes int, warmup, duration time.Duration) Result {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        n,
		MaxIdleConnsPerHost: n,
		MaxConnsPerHost:     n,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	start := time.Now()
	measureFrom := start.Add(warmup)
	stop := measureFrom.Add(duration)
	ctx, cancel := context.WithDeadline(context.Background(), stop)
	defer cancel()

	var mu sync.Mutex
	var all []sample
	errs := 0
	firstErr := ""
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			wk := newWorker(client, base, fmt.Sprintf("%s-%d", prefix, w), blobBytes, uint64(w))
			var mine []sample
			myErrs := 0
			var myFirst error
			// A thread starts with one checkpoint, so gets and writes have a target.
			if err := wk.do(ctx, "put"); err != nil {
				myErrs++
				myFirst = err
			}
			for ctx.Err() == nil {
				op := m.pick(wk.rng)
				t0 := time.Now()
				err := wk.do(ctx, op)
				d := time.Since(t0)
				if ctx.Err() != nil {
					break // cut off by the deadline: not a full request
				}
				if t0.Before(measureFrom) {
					continue
				}
				if err != nil {
					myErrs++
					if myFirst == nil {
						myFirst = err
					}
					continue
				}
				mine = append(mine, sample{op, d})
			}
			mu.Lock()
			all = append(all, mine...)
			errs += myErrs
			if firstErr == "" && myFirst != nil {
				firstErr = myFirst.Error()
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res := Result{Conns: n, Seconds: duration.Seconds(), Ops: len(all), Errors: errs, FirstErr: firstErr, ByOp: map[string]opStats{}}
	res.OpsPerSec = float64(len(all)) / duration.Seconds()
	var ds []time.Duration
	byOp := map[string][]time.Duration{}
	for _, s := range all {
		ds = append(ds, s.d)
		byOp[s.op] = append(byOp[s.op], s.d)
	}
	res.P50ms, res.P99ms = pct(ds, 0.50), pct(ds, 0.99)
	for op, d := range byOp {
		res.ByOp[op] = opStats{Ops: len(d), P50ms: pct(d, 0.50), P99ms: pct(d, 0.99)}
	}
	return res
}

func pct(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q * float64(len(ds)-1))
	return float64(ds[i].Microseconds()) / 1000
}

type worker struct {
	client  *http.Client
	base    string
	thread  string
	rng     *rand.Rand
	step    int
	last    string
	payload []byte
	skel    []byte
}

func newWorker(client *http.Client, base, thread string, blobBytes int, seed uint64) *worker {
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	payload := make([]byte, blobBytes)
	for i := range payload {
		payload[i] = byte('a' + rng.IntN(26))
	}
	skel, _ := msgpack.Marshal(map[string]any{
		"v": 4, "ts": time.Now().UTC().Format(time.RFC3339Nano),
		"versions_seen":    map[string]any{"agent": map[string]string{"messages": "1"}},
		"updated_channels": []string{"messages", "step"},
	})
	return &worker{client: client, base: base, thread: thread, rng: rng, payload: payload, skel: skel}
}

func (w *worker) do(ctx context.Context, op string) error {
	switch op {
	case "put":
		w.step++
		id := fmt.Sprintf("1f0%013x-%08x", time.Now().UnixNano(), w.step)
		version := fmt.Sprintf("%032d.%016d", w.step, w.rng.IntN(1e15))
		body := putCheckpoint{
			CheckpointID:       id,
			ParentCheckpointID: w.last,
			Checkpoint:         typed{Type: "msgpack", Data: w.skel},
			Metadata:           map[string]any{"source": "loop", "step": w.step, "parents": map[string]any{}},
			ChannelVersions:    map[string]string{"messages": version, "step": version},
			Blobs: []blob{
				{Channel: "messages", Version: version, Value: typed{Type: "msgpack", Data: w.payload}},
				{Channel: "step", Version: version, Value: typed{Type: "msgpack", Data: []byte{byte(w.step & 0x7f)}}},
			},
		}
		if err := w.send(ctx, http.MethodPost, "/checkpoints", body, http.StatusOK); err != nil {
			return err
		}
		w.last = id
		return nil
	case "put_writes":
		task := fmt.Sprintf("task-%d-%d", w.step, w.rng.Uint32())
		body := putWrites{CheckpointID: w.last, Writes: []write{
			{TaskID: task, Idx: 0, Channel: "messages", Value: typed{Type: "msgpack", Data: w.payload[:256]}},
			{TaskID: task, Idx: 1, Channel: "step", Value: typed{Type: "msgpack", Data: []byte{1}}},
		}}
		return w.send(ctx, http.MethodPost, "/writes", body, http.StatusNoContent)
	default:
		return w.send(ctx, http.MethodGet, "/checkpoint?checkpoint_ns=", nil, http.StatusOK)
	}
}

func (w *worker) send(ctx context.Context, method, suffix string, body any, want int) error {
	var rd io.Reader
	if body != nil {
		data, err := msgpack.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.base+"/v1/threads/"+w.thread+suffix, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/msgpack")
	if body != nil {
		req.Header.Set("Content-Type", "application/msgpack")
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %.200s", method, suffix, resp.StatusCode, data)
	}
	return nil
}
