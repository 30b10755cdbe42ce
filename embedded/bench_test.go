package embedded_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

func BenchmarkPutCheckpoint(b *testing.B) {
	for _, e := range engines {
		b.Run(e, func(b *testing.B) {
			s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"), embedded.WithEngine(e))
			ref := storetest.NewRef()
			for i := 0; b.Loop(); i++ {
				in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
				storetest.SetChannel(&in, "messages", fmt.Sprint(i), "hello")
				storetest.MustPutCheckpoint(b, s, in)
			}
		})
	}
}

// BenchmarkPutCheckpointSession puts session checkpoints that reference
// ten unchanged channels of their predecessors: every put looks up the ten
// blobs to extend them, and rewrites them only when they would expire
// first, about once per session lifetime.
func BenchmarkPutCheckpointSession(b *testing.B) {
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	ref := storetest.NewRef()
	in := storetest.NewCheckpoint(ref, "base")
	for c := range 10 {
		storetest.SetChannel(&in, fmt.Sprint("channel-", c), "1", strings.Repeat("v", 1<<10))
	}
	storetest.MustPutCheckpoint(b, s, storetest.Expiring(in, time.Now().Add(time.Hour).Unix()))
	unchanged := in.ChannelVersions
	for i := 0; b.Loop(); i++ {
		in := storetest.Expiring(storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i)), time.Now().Add(time.Hour).Unix())
		maps.Copy(in.ChannelVersions, unchanged)
		storetest.SetChannel(&in, "messages", fmt.Sprint(i), "hello")
		storetest.MustPutCheckpoint(b, s, in)
	}
}

func BenchmarkPutCheckpointParallel(b *testing.B) {
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	b.RunParallel(func(pb *testing.PB) {
		ref := storetest.NewRef()
		for i := 0; pb.Next(); i++ {
			in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
			storetest.SetChannel(&in, "messages", fmt.Sprint(i), "hello")
			storetest.MustPutCheckpoint(b, s, in)
		}
	})
}

func BenchmarkGetLatest(b *testing.B) {
	for _, e := range engines {
		b.Run(e, func(b *testing.B) {
			s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"), embedded.WithEngine(e))
			ref := storetest.NewRef()
			for i := range 1000 {
				in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
				storetest.SetChannel(&in, "messages", fmt.Sprint(i), "hello")
				storetest.MustPutCheckpoint(b, s, in)
			}
			for b.Loop() {
				storetest.MustGetTuple(b, s, ref)
			}
		})
	}
}

// putLongThread puts a thread of n checkpoints as a long agent run leaves
// it: a chain, each checkpoint with a 4 KiB body, a 2 KiB metadata value,
// a 4 KiB blob and two writes, every tenth with an error write. Writers run
// in parallel so that their puts share transactions.
func putLongThread(tb testing.TB, s *embedded.Store, n int) saver.CheckpointRef {
	tb.Helper()
	ref := storetest.NewRef()
	body := saver.Typed{Type: "msgpack", Data: bytes.Repeat([]byte{0xa5}, 4<<10)}
	var wg sync.WaitGroup
	ids := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range ids {
				id := fmt.Sprintf("%08d", i)
				in := storetest.NewCheckpoint(ref, id)
				if i > 0 {
					in.ParentID = fmt.Sprintf("%08d", i-1)
				}
				in.Body = body
				in.Metadata = saver.Metadata{
					"source": "loop", "step": int64(i), "run_id": "run", "parents": map[string]any{},
					"writes": map[string]any{"agent": strings.Repeat("w", 2<<10)},
				}
				storetest.SetChannel(&in, "messages", id, strings.Repeat("m", 4<<10))
				storetest.MustPutCheckpoint(tb, s, in)
				writes := []saver.Write{storetest.NewWrite("task", 0, "messages", "reply")}
				if i%10 == 0 {
					writes = append(writes, storetest.NewWrite("task", -1, saver.ChannelError, "boom"))
				}
				storetest.MustPutWrites(tb, s, in.CheckpointRef, writes...)
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	return ref
}

// BenchmarkListNodes10k lists the nodes of a 10,000-checkpoint thread, as
// every tree query does.
func BenchmarkListNodes10k(b *testing.B) {
	for _, e := range engines {
		b.Run(e, func(b *testing.B) {
			s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"), embedded.WithEngine(e))
			ref := putLongThread(b, s, 10_000)
			b.ReportAllocs()
			for b.Loop() {
				nodes, err := s.ListNodes(b.Context(), ref.Tenant, ref.ThreadID)
				if err != nil || len(nodes) != 10_000 {
					b.Fatalf("ListNodes = %d nodes, %v", len(nodes), err)
				}
			}
		})
	}
}

// BenchmarkWriteThenTree10k puts a checkpoint to a 10,000-checkpoint
// thread and then asks for its tree, as a UI following a running agent
// does: the put and the first query after it.
func BenchmarkWriteThenTree10k(b *testing.B) {
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	ref := putLongThread(b, s, 10_000)
	if _, err := s.Tree(b.Context(), ref.Tenant, ref.ThreadID); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 10_000
	for b.Loop() {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
		in.ParentID = fmt.Sprintf("%08d", i-1)
		i++
		storetest.MustPutCheckpoint(b, s, in)
		if _, err := s.Tree(b.Context(), ref.Tenant, ref.ThreadID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListCheckpoints10k lists the same thread with its payloads, the
// cost that ListNodes avoids.
func BenchmarkListCheckpoints10k(b *testing.B) {
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	ref := putLongThread(b, s, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		if got := storetest.MustListThread(b, s, ref.Tenant, ref.ThreadID); len(got) != 10_000 {
			b.Fatalf("listed %d checkpoints", len(got))
		}
	}
}

// BenchmarkSearchItems10k searches a namespace of 10,000 items of one
// 384-dim vector and a small value, as the Store benchmark's does
// (bench/store.py): top 10 by a query, and top 10 filtered to a tag ten
// items hold.
func BenchmarkSearchItems10k(b *testing.B) {
	const n, dims = 10_000, 384
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	ctx := context.Background()
	ns := saver.Namespace{"users", "u1", "memories"}
	rng := rand.New(rand.NewPCG(1, 2))
	vector := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for lo := 0; lo < n; lo += 500 {
		var ops []saver.ItemOp
		for i := lo; i < lo+500; i++ {
			ops = append(ops, saver.PutOp{Namespace: ns, Key: fmt.Sprintf("k%d", i),
				Value:   []byte(fmt.Sprintf(`{"text":"d%d","tag":"t%d","n":%d,"note":"%s"}`, i, i%1000, i, strings.Repeat("word ", 20))),
				Vectors: [][]float32{vector()}})
		}
		if _, err := s.Batch(ctx, "t", ops); err != nil {
			b.Fatal(err)
		}
	}
	search := func(b *testing.B, op *saver.SearchOp) {
		if err := op.Validate(saver.Index{Dims: dims}); err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime(b)
		for b.Loop() {
			res, err := s.Batch(ctx, "t", []saver.ItemOp{op})
			if err != nil {
				b.Fatal(err)
			}
			if len(res[0].Items) != 10 {
				b.Fatalf("%d items", len(res[0].Items))
			}
		}
		b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.Run("query", func(b *testing.B) {
		search(b, &saver.SearchOp{Prefix: ns, Limit: 10, Query: vector()})
	})
	b.Run("filter", func(b *testing.B) {
		search(b, &saver.SearchOp{Prefix: ns, Limit: 10, Filter: []byte(`{"tag":"t7"}`)})
	})
}

// BenchmarkPutItem10k updates random items of a namespace of 10,000, one
// 384-dim vector each, one put a batch: the Store benchmark's put, without
// the HTTP round trip.
func BenchmarkPutItem10k(b *testing.B) {
	const n, dims = 10_000, 384
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	ctx := context.Background()
	ns := saver.Namespace{"users", "u1", "memories"}
	rng := rand.New(rand.NewPCG(1, 2))
	vector := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	put := func(i int) saver.PutOp {
		return saver.PutOp{Namespace: ns, Key: fmt.Sprintf("k%d", i),
			Value:   []byte(fmt.Sprintf(`{"text":"d%d","tag":"t%d","n":%d,"note":"%s"}`, i, i%1000, i, strings.Repeat("word ", 20))),
			Vectors: [][]float32{vector()}}
	}
	for lo := 0; lo < n; lo += 500 {
		var ops []saver.ItemOp
		for i := lo; i < lo+500; i++ {
			ops = append(ops, put(i))
		}
		if _, err := s.Batch(ctx, "t", ops); err != nil {
			b.Fatal(err)
		}
	}
	// The process's CPU time a put, beside the wall time: on a shared
	// machine the wall time follows the others' load and the disk's.
	cpu0 := cpuTime(b)
	for b.Loop() {
		if _, err := s.Batch(ctx, "t", []saver.ItemOp{put(rng.IntN(n))}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
