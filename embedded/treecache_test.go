package embedded

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/storetest"
	"github.com/saver-dev/saver/tree"
)

// TestTreeCacheMatchesScan runs the same random writes on a store with the
// tree cache and one without, reading every thread's nodes from both after
// each write: every write that changes the tree index (checkpoints, flags,
// expiry set or passed, runs deleted, threads deleted, copied or pruned,
// sweeps) must reach the cached store's answer at once.
func TestTreeCacheMatchesScan(t *testing.T) {
	for _, engine := range []string{EnginePebble, EngineBolt} {
		t.Run(engine, func(t *testing.T) {
			// 40 nodes: evictions, and threads that outgrow the cache;
			// 10,000: every thread stays, updated by each write.
			for _, size := range []int{40, 10_000} {
				for seed := range uint64(6) {
					t.Run(fmt.Sprint(size, "/", seed), func(t *testing.T) { treeCacheHistory(t, engine, size, seed) })
				}
			}
		})
	}
}

func treeCacheHistory(t *testing.T, engine string, size int, seed uint64) {
	clock := storetest.NewClock()
	open := func(name string, nodes int) *Store {
		s, err := Open(filepath.Join(t.TempDir(), name), WithEngine(engine), WithNow(clock.Now),
			WithTreeCache(nodes), WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	cached, plain := open("cached", size), open("plain", 0)
	stores := []*Store{cached, plain}
	rng := rand.New(rand.NewPCG(seed, 7))
	const tenant = "t"
	threads := []string{"a", "b", "c", "d"}
	ids := map[string][]string{} // checkpoint ids put, by thread
	next := 0
	both := func(what string, fn func(s *Store) error) {
		var errs [2]error
		for i, s := range stores {
			errs[i] = fn(s)
		}
		if (errs[0] == nil) != (errs[1] == nil) {
			t.Fatalf("%s: cached store: %v, plain store: %v", what, errs[0], errs[1])
		}
	}
	ref := func(thread, ns string) saver.CheckpointRef {
		return saver.CheckpointRef{Tenant: tenant, ThreadID: thread, NS: ns}
	}
	pick := func(thread string) (string, bool) {
		if len(ids[thread]) == 0 {
			return "", false
		}
		return ids[thread][rng.IntN(len(ids[thread]))], true
	}
	for step := range 300 {
		thread := threads[rng.IntN(len(threads))]
		ns := []string{"", "", "child:1"}[rng.IntN(3)]
		var what string
		switch op := rng.IntN(20); {
		case op < 8:
			next++
			id := fmt.Sprintf("%06d", next)
			in := storetest.NewCheckpoint(ref(thread, ns), id)
			if parent, ok := pick(thread); ok && rng.IntN(4) > 0 {
				in.ParentID = parent
			}
			in.Metadata = saver.Metadata{"source": "loop", "step": int64(next), "run_id": fmt.Sprint("run-", rng.IntN(4))}
			if rng.IntN(4) == 0 {
				in = storetest.Expiring(in, clock.Now().Add(time.Duration(1+rng.IntN(3))*time.Minute).Unix())
			}
			what = "put " + id
			ids[thread] = append(ids[thread], id)
			both(what, func(s *Store) error { return s.PutCheckpoint(t.Context(), in) })
		case op < 12:
			id, ok := pick(thread)
			if !ok {
				continue
			}
			w := []saver.Write{
				storetest.NewWrite("task", 0, "ch", "v"),
				storetest.NewWrite("task", -1, saver.ChannelError, "boom"),
				storetest.NewWrite("task", -3, saver.ChannelInterrupt, "ask"),
			}[rng.IntN(3)]
			w.TaskID = fmt.Sprint("task-", rng.IntN(3))
			in := saver.PutWrites{CheckpointRef: storetest.At(ref(thread, ns), id), Writes: []saver.Write{w}}
			if rng.IntN(3) == 0 {
				in.ExpiresAt = clock.Now().Add(time.Duration(1+rng.IntN(3)) * time.Minute).Unix()
			}
			what = "writes to " + id
			both(what, func(s *Store) error { return s.PutWrites(t.Context(), in) })
		case op < 13:
			id, ok := pick(thread)
			if !ok {
				continue
			}
			exp := clock.Now().Add(time.Duration(rng.IntN(3)) * time.Minute).Unix()
			what = "set expiry of " + id
			both(what, func(s *Store) error { return s.SetExpiry(t.Context(), storetest.At(ref(thread, ns), id), exp) })
		case op < 15:
			what = "advance the clock"
			clock.Advance(time.Duration(30+rng.IntN(60)) * time.Second)
			if rng.IntN(2) == 0 {
				what = "sweep"
				both(what, func(s *Store) error { _, err := s.Sweep(t.Context()); return err })
			}
		case op < 16:
			run := fmt.Sprint("run-", rng.IntN(4))
			what = "delete " + run
			both(what, func(s *Store) error { return s.DeleteForRuns(t.Context(), tenant, []string{run}) })
		case op < 17:
			what = "delete thread " + thread
			both(what, func(s *Store) error { return s.DeleteThread(t.Context(), tenant, thread) })
			threads = append(threads, fmt.Sprint("t", step)) // deleted threads refuse late writes
		case op < 18:
			dst := fmt.Sprint("copy", step)
			what = "copy " + thread + " to " + dst
			both(what, func(s *Store) error { return s.CopyThread(t.Context(), tenant, thread, dst) })
			threads = append(threads, dst)
			ids[dst] = append([]string(nil), ids[thread]...)
		default:
			strategy := []saver.PruneStrategy{saver.PruneKeepLatest, saver.PruneDelete}[rng.IntN(2)]
			what = fmt.Sprintf("prune %s (%s)", thread, strategy)
			both(what, func(s *Store) error { return s.Prune(t.Context(), tenant, []string{thread}, strategy) })
		}
		for _, th := range threads {
			// In the store's order, not sorted: the cache keeps its nodes
			// in key order, as a scan reads them, to find a node written.
			got, err := cached.ListNodes(t.Context(), tenant, th)
			if err != nil {
				t.Fatalf("ListNodes: %v", err)
			}
			want, err := plain.ListNodes(t.Context(), tenant, th)
			if err != nil {
				t.Fatalf("ListNodes: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("step %d, after %s: thread %s's nodes (-scanned +cached):\n%s", step, what, th, diff)
			}
			built, err := cached.Tree(t.Context(), tenant, th)
			if err != nil {
				t.Fatalf("Tree: %v", err)
			}
			fresh := tree.Build(want)
			if diff := cmp.Diff(fresh.Compact(), built.Compact()); diff != "" || fresh.Draw() != built.Draw() {
				t.Fatalf("step %d, after %s: thread %s's tree (-built now +cached):\n%s%s\n%s", step, what, th, diff,
					fresh.Draw(), built.Draw())
			}
		}
	}
}

// TestTreeCacheReadsCache shows that a thread read lately is answered from
// the cache: a change written around the store's write path (as no code
// of the store does) is not seen. A put through the store updates the
// cached thread without a scan, so the change stays unseen; a flag the
// node already has is not a change the cache applies, and drops the
// thread, whose scan then sees it.
func TestTreeCacheReadsCache(t *testing.T) {
	clock := storetest.NewClock()
	s := openIndexed(t, filepath.Join(t.TempDir(), "saver.db"), EnginePebble, clock)
	defer s.Close()
	ref := indexThread(t, s, clock)
	before := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
	if err := s.db.Update(func(tx kvTx) error {
		return deletePrefix(tx.Bucket(bucketNodes), key(ref.Tenant, ref.ThreadID))
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	storetest.MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, before)
	scans := 0
	s.treeScanHook = func() { scans++ }
	storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, "0100"))
	got := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
	if len(got) != len(before)+1 || scans != 0 {
		t.Fatalf("after a put, ListNodes = %d nodes after %d scans, want the %d cached and the new one, no scan",
			len(got), scans, len(before))
	}
	flagged := slices.IndexFunc(before, func(n saver.Node) bool { return n.NS == "" && n.HasError })
	if flagged < 0 {
		t.Fatal("indexThread put no root node with an error")
	}
	storetest.MustPutWrites(t, s, storetest.At(ref, before[flagged].ID),
		storetest.NewWrite("again", -1, saver.ChannelError, "boom"))
	if got := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(got) != 1 || got[0].ID != "0100" || scans != 1 {
		t.Fatalf("after a second error flag, ListNodes = %+v after %d scans, want the new node alone, scanned", got, scans)
	}
}

// TestTreeCacheRacedScan: a write that commits between a scan of the tree
// index and its keeping in the cache is seen by the next read.
func TestTreeCacheRacedScan(t *testing.T) {
	clock := storetest.NewClock()
	s := openIndexed(t, filepath.Join(t.TempDir(), "saver.db"), EnginePebble, clock)
	defer s.Close()
	ref := storetest.NewRef()
	storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, "0001"))
	s.treeScanHook = func() {
		s.treeScanHook = nil
		storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, "0002"))
	}
	if got := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(got) != 1 {
		t.Fatalf("the raced scan = %d nodes, want the 1 it saw", len(got))
	}
	if got := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(got) != 2 {
		t.Fatalf("after the raced scan, ListNodes = %d nodes, want 2", len(got))
	}
}

// TestTreeCacheKeepsNoRacedScan: a scan whose thread was written after it
// read the generation is not kept, and what a write drops is gone.
func TestTreeCacheKeepsNoRacedScan(t *testing.T) {
	c := newTreeCache(10)
	p := key("t", "a")
	th := newCachedThread(string(p), []cachedNode{{node: saver.Node{ID: "1"}}})
	gen := c.gen(p)
	c.apply(map[string]*threadChange{string(p): {}}, true) // a write that does not apply
	c.keep(th, gen)
	if _, ok := c.get(p); ok {
		t.Fatal("a scan that raced a write was kept")
	}
	c.keep(th, c.gen(p))
	if _, ok := c.get(p); !ok {
		t.Fatal("a scan was not kept")
	}
	c.dropAll()
	if _, ok := c.get(p); ok {
		t.Fatal("dropping every thread kept one")
	}
}

// TestTreeCacheBound: the cache holds at most its number of nodes, the
// threads read longest ago going first, and never a thread larger than it.
func TestTreeCacheBound(t *testing.T) {
	c := newTreeCache(10)
	of := func(p []byte, n int) *cachedThread {
		return newCachedThread(string(p), make([]cachedNode, n))
	}
	for _, th := range []string{"a", "b", "c"} {
		p := key("t", th)
		c.keep(of(p, 4), c.gen(p))
	}
	if c.held != 8 {
		t.Fatalf("held %d nodes, want 8 (a evicted for c)", c.held)
	}
	for th, want := range map[string]bool{"a": false, "b": true, "c": true} {
		if _, ok := c.get(key("t", th)); ok != want {
			t.Errorf("thread %s cached = %v, want %v", th, ok, want)
		}
	}
	big := key("t", "big")
	c.keep(of(big, 11), c.gen(big))
	if _, ok := c.get(big); ok || c.held != 8 {
		t.Fatalf("a thread over the bound was kept (held %d)", c.held)
	}
}

// TestTreeCacheRacingReads reads a thread while writers add to it: once the
// writers are done, the cached answer holds every node written, so no scan
// that raced a write was kept.
func TestTreeCacheRacingReads(t *testing.T) {
	clock := storetest.NewClock()
	s := openIndexed(t, filepath.Join(t.TempDir(), "saver.db"), EnginePebble, clock)
	defer s.Close()
	ref := storetest.NewRef()
	const writers, each = 4, 50
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
				}
			}
		})
	}
	var ws sync.WaitGroup
	for w := range writers {
		ws.Go(func() {
			for i := range each {
				storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, fmt.Sprintf("%02d-%03d", w, i)))
			}
		})
	}
	ws.Wait()
	close(done)
	readers.Wait()
	if got := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(got) != writers*each {
		t.Fatalf("ListNodes = %d nodes after the writes, want %d", len(got), writers*each)
	}
}

// TestCachedThreadWith applies each kind of put to a cached thread: nodes
// stay in key order, a node put again keeps its flags, a flag the node
// lacks is set, and what the scan would read otherwise (a flag of a node
// not listed, a second flag of a kind) is refused. The thread applied to
// is never changed: readers share it.
func TestCachedThreadWith(t *testing.T) {
	node := func(ns, id string, exp int64) cachedNode {
		return cachedNode{node: saver.Node{ThreadID: "a", NS: ns, ID: id}, exp: exp}
	}
	put := func(c cachedNode) nodePut { return nodePut{ns: c.node.NS, id: c.node.ID, node: c} }
	flag := func(ns, id string, f nodeFlag, exp int64) nodePut {
		return nodePut{ns: ns, id: id, flag: f, exp: exp}
	}
	flagged := node("", "2", 0)
	flagged.hasErr, flagged.errExp = true, 50
	reput := node("", "2", 70)
	reput.hasErr, reput.errExp = true, 50
	withInt := node("", "1", 0)
	withInt.hasInt, withInt.intExp = true, 60
	base := []cachedNode{node("", "1", 0), flagged, node("child", "3", 0)}
	for _, tc := range []struct {
		name string
		puts []nodePut
		want []cachedNode // nil: refused
	}{
		{"append", []nodePut{put(node("child", "4", 0))},
			[]cachedNode{base[0], base[1], base[2], node("child", "4", 0)}},
		{"insert", []nodePut{put(node("", "5", 0))},
			[]cachedNode{base[0], base[1], node("", "5", 0), base[2]}},
		{"first", []nodePut{put(node("", "0", 0))},
			[]cachedNode{node("", "0", 0), base[0], base[1], base[2]}},
		{"put again keeps flags", []nodePut{put(node("", "2", 70))},
			[]cachedNode{base[0], reput, base[2]}},
		{"new flag", []nodePut{flag("", "1", flagInterrupt, 60)},
			[]cachedNode{withInt, base[1], base[2]}},
		{"node then its flag", []nodePut{put(node("child", "4", 0)), flag("child", "4", flagError, 0)},
			[]cachedNode{base[0], base[1], base[2], {node: node("child", "4", 0).node, hasErr: true}}},
		{"flag of no node", []nodePut{flag("", "9", flagError, 0)}, nil},
		{"second flag of a kind", []nodePut{flag("", "2", flagError, 90)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newCachedThread("p", slices.Clone(base))
			// Room past the end of each namespace, as after a put that grew
			// it, so that an append may write in place.
			for i, space := range th.spaces {
				th.spaces[i] = append(make(spaceNodes, 0, 8), space...)
			}
			got, ok := th.with(tc.puts)
			if diff := cmp.Diff(base, th.flat(), cmp.AllowUnexported(cachedNode{})); diff != "" {
				t.Fatalf("the thread applied to changed (-before +after):\n%s", diff)
			}
			if tc.want == nil {
				if ok {
					t.Fatalf("applied %+v, want refused", got.flat())
				}
				return
			}
			if !ok {
				t.Fatal("refused")
			}
			if diff := cmp.Diff(tc.want, got.flat(), cmp.AllowUnexported(cachedNode{})); diff != "" {
				t.Fatalf("nodes (-want +got):\n%s", diff)
			}
			if got.n != len(tc.want) {
				t.Fatalf("the thread counts %d nodes, holds %d", got.n, len(tc.want))
			}
		})
	}
}

// TestCachedThreadWithCopiesLittle: a change that writes a node readers
// see copies the thread's nodes, up to maxNodeCopy of them; past that the
// thread is dropped (with refuses), since the copy holds up every writer.
// An append copies nothing that readers see.
func TestCachedThreadWithCopiesLittle(t *testing.T) {
	thread := func(n int) *cachedThread {
		nodes := make([]cachedNode, n)
		for i := range nodes {
			nodes[i].node = saver.Node{ThreadID: "a", ID: fmt.Sprintf("%06d", i+1)}
		}
		return newCachedThread("p", nodes)
	}
	put := func(id string) nodePut {
		return nodePut{id: id, node: cachedNode{node: saver.Node{ThreadID: "a", ID: id}}}
	}
	flag := nodePut{id: "000001", flag: flagError}
	for _, tc := range []struct {
		name  string
		nodes int
		put   nodePut
		want  int // nodes after the put, 0 if refused
	}{
		{"append past the bound", maxNodeCopy + 1, put("999999"), maxNodeCopy + 2},
		{"insert at the bound", maxNodeCopy, put("000000"), maxNodeCopy + 1},
		{"insert past the bound", maxNodeCopy + 1, put("000000"), 0},
		{"flag at the bound", maxNodeCopy, flag, maxNodeCopy},
		{"flag past the bound", maxNodeCopy + 1, flag, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := thread(tc.nodes)
			got, ok := th.with([]nodePut{tc.put})
			if ok != (tc.want > 0) {
				t.Fatalf("applied = %v, want %v", ok, tc.want > 0)
			}
			if ok && (len(got.flat()) != tc.want || got.n != tc.want) {
				t.Fatalf("%d nodes after the put (counted %d), want %d", len(got.flat()), got.n, tc.want)
			}
			if first := th.flat()[0]; first.node.ID != "000001" || first.hasErr {
				t.Fatalf("the thread applied to changed: first node %+v", first)
			}
		})
	}
	// A root checkpoint of a thread with a subgraph sorts before the
	// subgraph's nodes, and is an append all the same: nothing is copied.
	th := thread(maxNodeCopy + 1)
	sub := newCachedThread("p", []cachedNode{{node: saver.Node{ThreadID: "a", NS: "sub:1", ID: "000001"}}})
	th.spaces, th.n = append(th.spaces, sub.spaces...), th.n+1
	got, ok := th.with([]nodePut{put("999999")})
	if !ok {
		t.Fatal("a root append before a subgraph's nodes refused")
	}
	if all := got.flat(); len(all) != maxNodeCopy+3 || all[maxNodeCopy+1].node.ID != "999999" || all[maxNodeCopy+2].node.NS != "sub:1" {
		t.Fatalf("after a root append: %d nodes, the last two %+v", len(all), all[len(all)-2:])
	}
	if first := th.flat(); len(first) != maxNodeCopy+2 || first[maxNodeCopy+1].node.NS != "sub:1" {
		t.Fatal("the thread applied to changed")
	}
}

// flat is the thread's nodes in the order a scan reads them.
func (t *cachedThread) flat() []cachedNode {
	var out []cachedNode
	for _, space := range t.spaces {
		out = append(out, space...)
	}
	return out
}
