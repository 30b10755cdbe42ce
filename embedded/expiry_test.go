package embedded

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/storetest"
)

// openClocked opens a store in a new file on a test clock.
func openClocked(t *testing.T) (*Store, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock()
	s, err := Open(filepath.Join(t.TempDir(), "saver.db"), WithNow(clock.Now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

// rawGet returns a copy of the value under k in bucket name.
func rawGet(t *testing.T, s *Store, name, k []byte) []byte {
	t.Helper()
	var v []byte
	if err := s.db.View(func(tx kvTx) error {
		v = bytes.Clone(tx.Bucket(name).Get(k))
		return nil
	}); err != nil {
		t.Fatalf("View: %v", err)
	}
	return v
}

// rawPut stores v under k in bucket name, as an older version of the store
// would have.
func rawPut(t *testing.T, s *Store, name, k []byte, v any) {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	// Through the store's one write path, which keeps its tree cache true.
	if err := s.writes.do(func(tx kvTx) error { return tx.Bucket(name).Put(k, b) }); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// mustExpiry returns the expiry of the record under k in bucket name.
func mustExpiry(t *testing.T, s *Store, name, k []byte) int64 {
	t.Helper()
	v := rawGet(t, s, name, k)
	if v == nil {
		t.Fatalf("no record under %q in %s", k, name)
	}
	exp, err := recordExpiry(v)
	if err != nil {
		t.Fatalf("recordExpiry: %v", err)
	}
	return exp
}

// TestWithExpiry rewrites the expiry of each kind of record, old and new:
// the record decodes as before but for its expiry, which comes first.
func TestWithExpiry(t *testing.T) {
	ref := saver.CheckpointRef{ID: "1"}
	cp := &saver.Checkpoint{
		CheckpointRef: ref, ParentID: "0", Body: saver.Typed{Type: "msgpack", Data: bytes.Repeat([]byte{0xc1}, 300)},
		Metadata:        saver.Metadata{"source": "loop", "step": int64(3), "nested": map[string]any{"f": 1.5, "l": []any{"x", nil}}},
		ChannelVersions: map[string]string{"a": "1", "b": "2"}, Scope: saver.ScopeSession, ExpiresAt: 1_800_000_000,
	}
	w := saver.Write{TaskID: "task", TaskPath: "path", Idx: -1, Channel: saver.ChannelError, Value: saver.Typed{Type: "msgpack", Data: []byte{1}}}
	value := saver.Typed{Type: "msgpack", Data: bytes.Repeat([]byte{0xd3}, 70000)}
	newCheckpoint, _ := encodeCheckpoint(cp)
	newWrite, _ := encodeWrite(&w, 1_800_000_000)
	newBlob, _ := encodeBlob(value, 1_800_000_000)
	tests := []struct {
		name   string
		record []byte
		check  func(t *testing.T, v []byte, exp int64)
	}{
		{"Checkpoint", newCheckpoint, func(t *testing.T, v []byte, exp int64) {
			got, err := decodeCheckpoint(ref, v)
			want := *cp
			want.ExpiresAt = exp
			if err != nil || !cmp.Equal(&want, got) {
				t.Fatalf("decodeCheckpoint = %+v, %v; want %+v", got, err, &want)
			}
		}},
		{"OldCheckpoint", mustMarshal(t, map[string]any{"parent_id": "0", "body": cp.Body, "metadata": cp.Metadata, "channel_versions": cp.ChannelVersions}), func(t *testing.T, v []byte, exp int64) {
			got, err := decodeCheckpoint(ref, v)
			want := *cp
			want.Scope, want.ExpiresAt = "", exp
			if err != nil || !cmp.Equal(&want, got) {
				t.Fatalf("decodeCheckpoint = %+v, %v; want %+v", got, err, &want)
			}
		}},
		{"Write", newWrite, func(t *testing.T, v []byte, exp int64) {
			got, gotExp, err := decodeWrite(w.TaskID, w.Idx, v)
			if err != nil || !cmp.Equal(w, got) || gotExp != exp {
				t.Fatalf("decodeWrite = %+v, %d, %v", got, gotExp, err)
			}
		}},
		{"OldWrite", mustMarshal(t, map[string]any{"task_path": w.TaskPath, "channel": w.Channel, "value": w.Value}), func(t *testing.T, v []byte, exp int64) {
			got, gotExp, err := decodeWrite(w.TaskID, w.Idx, v)
			if err != nil || !cmp.Equal(w, got) || gotExp != exp {
				t.Fatalf("decodeWrite = %+v, %d, %v", got, gotExp, err)
			}
		}},
		{"Blob", newBlob, func(t *testing.T, v []byte, exp int64) {
			got, gotExp, err := decodeBlob(v)
			if err != nil || !cmp.Equal(value, got) || gotExp != exp {
				t.Fatalf("decodeBlob = %d bytes, %d, %v", len(got.Data), gotExp, err)
			}
		}},
		{"OldBlob", mustMarshal(t, &value), func(t *testing.T, v []byte, exp int64) {
			got, gotExp, err := decodeBlob(v)
			if err != nil || !cmp.Equal(value, got) || gotExp != exp {
				t.Fatalf("decodeBlob = %d bytes, %d, %v", len(got.Data), gotExp, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, exp := range []int64{0, 1, 1_900_000_000, -1} {
				v, err := withExpiry(tt.record, exp)
				if err != nil {
					t.Fatalf("withExpiry(%d): %v", exp, err)
				}
				if got, err := recordExpiry(v); err != nil || got != exp {
					t.Fatalf("recordExpiry = %d, %v; want %d", got, err, exp)
				}
				// The expiry is the first field, where reads look first.
				s := skim{b: v}
				if s.mapLen(); s.str() != fieldExpiresAt {
					t.Fatalf("first field is not %s", fieldExpiresAt)
				}
				tt.check(t, v, exp)
			}
		})
	}
	for _, b := range [][]byte{{}, {0x81}, {0x81, 0xa1, 'x'}, append(bytes.Clone(newBlob), 0x01), {0x92, 0x01, 0x02}} {
		if _, err := withExpiry(b, 1); err == nil {
			t.Errorf("withExpiry(% x) succeeded", b)
		}
	}
}

// TestExpiryOldRecords reads records written before expiry existed: they
// never expire, SetExpiry and puts referencing them work, and their blobs
// and writes stay forever.
func TestExpiryOldRecords(t *testing.T) {
	s, clock := openClocked(t)
	ref := storetest.At(storetest.NewRef(), "0001")
	rawPut(t, s, bucketCheckpoints, checkpointKey(ref), map[string]any{
		"parent_id": "", "body": storetest.Typed("body"), "metadata": map[string]any{"source": "loop", "step": 0},
		"channel_versions": map[string]string{"a": "1"},
	})
	rawPut(t, s, bucketBlobs, blobKey(ref, "a", "1"), storetest.Typed("a"))
	rawPut(t, s, bucketWrites, writeKey(ref, "task", -1), map[string]any{"task_path": "", "channel": saver.ChannelError, "value": storetest.Typed("boom")})
	rawPut(t, s, bucketWrites, writeKey(ref, "task", 0), map[string]any{"task_path": "", "channel": "ch", "value": storetest.Typed("w")})
	reindex(t, s)
	in := storetest.NewCheckpoint(ref, ref.ID)
	in.Body = storetest.Typed("body")
	storetest.SetChannel(&in, "a", "1", "a")
	w := storetest.NewWrite("task", 0, "ch", "w")
	want := storetest.WantTuple(in, w, storetest.NewWrite("task", -1, saver.ChannelError, "boom"))
	node := storetest.NodeOf(in)
	node.Source, node.HasError = "loop", true

	clock.Advance(100 * 365 * 24 * time.Hour)
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, ref), want)
	storetest.MustEqualTuples(t, storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID), []*saver.Tuple{want})
	storetest.MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, []saver.Node{node})

	// A put referencing the old blob leaves it as it is: it never expires.
	next := storetest.Expiring(storetest.NewCheckpoint(ref, "0002"), clock.Now().Add(time.Hour).Unix())
	next.ChannelVersions["a"] = "1"
	storetest.MustPutCheckpoint(t, s, next)
	old := rawGet(t, s, bucketBlobs, blobKey(ref, "a", "1"))
	if !bytes.Equal(old, mustMarshal(t, storetest.Typed("a"))) {
		t.Fatalf("old blob rewritten: % x", old)
	}
	// An ordinary write that exists is kept, old or not.
	storetest.MustPutExpiringWrites(t, s, ref, clock.Now().Add(time.Hour).Unix(), storetest.NewWrite("task", 0, "ch", "new"))

	storetest.MustSetExpiry(t, s, ref, clock.Now().Add(time.Hour).Unix())
	want.ExpiresAt = clock.Now().Add(time.Hour).Unix()
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, ref), want)
	for _, r := range []struct{ bucket, key []byte }{
		{bucketBlobs, blobKey(ref, "a", "1")},
		{bucketWrites, writeKey(ref, "task", -1)},
		{bucketWrites, writeKey(ref, "task", 0)},
	} {
		if got := mustExpiry(t, s, r.bucket, r.key); got != 0 {
			t.Fatalf("expiry in %s = %d after SetExpiry, want 0 (never)", r.bucket, got)
		}
	}
	clock.Advance(time.Hour)
	storetest.MustNotFind(t, s, ref)
}

// TestExpiryBlobExtension follows a blob's stored expiry: written with
// twice the remaining lifetime of its checkpoint, extended to twice the
// remaining lifetime of a longer-lived checkpoint that references it, and
// not rewritten when it already lives long enough.
func TestExpiryBlobExtension(t *testing.T) {
	s, clock := openClocked(t)
	t0 := clock.Now()
	ref := storetest.NewRef()
	bk := blobKey(ref, "a", "1")
	first := storetest.Expiring(storetest.NewCheckpoint(ref, "0001"), t0.Add(time.Hour).Unix())
	storetest.SetChannel(&first, "a", "1", "a")
	storetest.MustPutCheckpoint(t, s, first)
	if got, want := mustExpiry(t, s, bucketBlobs, bk), t0.Add(2*time.Hour).Unix(); got != want {
		t.Fatalf("blob expiry = %d, want %d (twice its checkpoint's lifetime)", got, want)
	}
	clock.Advance(30 * time.Minute)
	second := storetest.Expiring(storetest.NewCheckpoint(ref, "0002"), t0.Add(3*time.Hour).Unix())
	second.ChannelVersions["a"] = "1"
	storetest.MustPutCheckpoint(t, s, second)
	// 3h, plus the 2h30 the second checkpoint has left.
	if got, want := mustExpiry(t, s, bucketBlobs, bk), t0.Add(5*time.Hour+30*time.Minute).Unix(); got != want {
		t.Fatalf("extended blob expiry = %d, want %d", got, want)
	}
	before := rawGet(t, s, bucketBlobs, bk)
	third := storetest.Expiring(storetest.NewCheckpoint(ref, "0003"), t0.Add(4*time.Hour).Unix())
	third.ChannelVersions["a"] = "1"
	storetest.MustPutCheckpoint(t, s, third)
	storetest.MustSetExpiry(t, s, storetest.At(ref, "0003"), t0.Add(5*time.Hour).Unix())
	if after := rawGet(t, s, bucketBlobs, bk); !bytes.Equal(before, after) {
		t.Fatal("a blob that lives long enough was rewritten")
	}
}

// TestExpiredBlobsStayExpired references an expired blob from a new
// checkpoint that does not carry it: the blob is gone, and the put does not
// bring it back.
func TestExpiredBlobsStayExpired(t *testing.T) {
	s, clock := openClocked(t)
	ref := storetest.NewRef()
	first := storetest.Expiring(storetest.NewCheckpoint(ref, "0001"), clock.Now().Add(time.Hour).Unix())
	storetest.SetChannel(&first, "a", "1", "a")
	storetest.MustPutCheckpoint(t, s, first)
	clock.Advance(2 * time.Hour) // the blob lives twice its checkpoint's hour
	second := storetest.Expiring(storetest.NewCheckpoint(ref, "0002"), 0)
	second.ChannelVersions["a"] = "1"
	storetest.MustPutCheckpoint(t, s, second)
	if got := storetest.MustGetTuple(t, s, ref); len(got.Values) != 0 {
		t.Fatalf("expired blob read back: %v", storetest.Values(got))
	}
}

// countKeys returns the number of keys in each thread bucket.
func countKeys(t *testing.T, s *Store) [4]int {
	t.Helper()
	var n [4]int
	if err := s.db.View(func(tx kvTx) error {
		for i, name := range threadBuckets {
			n[i] = keyCount(tx.Bucket(name))
		}
		return nil
	}); err != nil {
		t.Fatalf("View: %v", err)
	}
	return n
}

// TestSweep lets part of a store expire and sweeps it: the expired
// checkpoints, blobs and writes are deleted, across more keys than one
// sweep transaction reads, and what reads return does not change.
func TestSweep(t *testing.T) {
	s, clock := openClocked(t)
	soon := clock.Now().Add(time.Hour).Unix()
	ref := storetest.NewRef()
	// A live checkpoint referencing a blob its expired parent wrote.
	first := storetest.Expiring(storetest.NewCheckpoint(ref, "0001"), soon)
	storetest.SetChannel(&first, "a", "1", "a")
	storetest.MustPutCheckpoint(t, s, first)
	second := storetest.Expiring(storetest.NewCheckpoint(ref, "0002"), 0)
	second.ChannelVersions["a"] = "1"
	storetest.SetChannel(&second, "b", "1", "b")
	storetest.MustPutCheckpoint(t, s, second)
	var doomed []saver.Write
	for i := range 2 * sweepBatch {
		doomed = append(doomed, storetest.NewWrite(fmt.Sprint("task-", i), 0, "ch", "w"))
	}
	storetest.MustPutExpiringWrites(t, s, first.CheckpointRef, soon, doomed...)
	storetest.MustPutExpiringWrites(t, s, second.CheckpointRef, soon, doomed[:10]...)
	kept := storetest.NewWrite("kept", 0, "ch", "w")
	storetest.MustPutExpiringWrites(t, s, second.CheckpointRef, 0, kept)
	other := storetest.Expiring(storetest.NewCheckpoint(storetest.NewRef(), "0001"), soon)
	storetest.SetChannel(&other, "c", "1", "c")
	storetest.MustPutCheckpoint(t, s, other)

	if got, err := s.Sweep(t.Context()); err != nil || got != 0 {
		t.Fatalf("Sweep before expiry = %d, %v; want 0", got, err)
	}
	clock.Advance(2 * time.Hour) // the blobs brought live twice their checkpoints' hour
	want := storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID)
	got, err := s.Sweep(t.Context())
	// first and other, other's blob, and first's and second's expiring writes.
	if wantN := 2 + 1 + 2*sweepBatch + 10; err != nil || got != wantN {
		t.Fatalf("Sweep = %d, %v; want %d", got, err, wantN)
	}
	if diff := cmp.Diff([4]int{1, 2, 1, 1}, countKeys(t, s)); diff != "" {
		t.Fatalf("keys left (checkpoints, blobs, writes, tree index) mismatch (-want +got):\n%s", diff)
	}
	storetest.MustEqualTuples(t, storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID), want)
	second.Blobs = append(second.Blobs, first.Blobs...)
	storetest.MustEqualTuple(t, want[0], storetest.WantTuple(second, kept))
}
