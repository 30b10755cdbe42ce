//go:build integration

package dynamo_test

import (
	"bytes"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestBundleWithLargeSpecialWrite: a put_writes of 150 writes and an error
// write of 5 MB goes as one transaction of the bundle and the error write,
// offloaded: sizes are measured after offloading, so it is not refused.
func TestBundleWithLargeSpecialWrite(t *testing.T) {
	st := localstack.MustStore(t)
	ref := storetest.NewRef()
	in := storetest.NewCheckpoint(ref, "0001")
	storetest.MustPutCheckpoint(t, st.Store, in)
	var ws []saver.Write
	for i := range 150 {
		ws = append(ws, storetest.NewWrite("fan", int64(i), "ch", "w"))
	}
	big := saver.Write{TaskID: "fan", Idx: -1, Channel: "__error__", Value: saver.Typed{Type: "bytes", Data: bytes.Repeat([]byte("e"), 5<<20)}}
	storetest.MustPutWrites(t, st.Store, in.CheckpointRef, append(ws, big)...)
	tup := storetest.MustGetTuple(t, st.Store, ref)
	if len(tup.Writes) != 151 {
		t.Fatalf("%d writes, want 151", len(tup.Writes))
	}
	if w := tup.Writes[0]; w.Idx != -1 || !bytes.Equal(w.Value.Data, big.Value.Data) {
		t.Fatalf("first write is %s/%d (%d bytes), want the 5 MB error", w.TaskID, w.Idx, len(w.Value.Data))
	}
}
