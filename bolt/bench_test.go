package bolt_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/saver-dev/saver/storetest"
)

func BenchmarkPutCheckpoint(b *testing.B) {
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	ref := storetest.NewRef()
	for i := 0; b.Loop(); i++ {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
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
	s := MustOpen(b, filepath.Join(b.TempDir(), "saver.db"))
	ref := storetest.NewRef()
	for i := range 1000 {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
		storetest.SetChannel(&in, "messages", fmt.Sprint(i), "hello")
		storetest.MustPutCheckpoint(b, s, in)
	}
	for b.Loop() {
		storetest.MustGetTuple(b, s, ref)
	}
}
