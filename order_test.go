package saver_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

func TestComparePositions(t *testing.T) {
	pos := func(id, thread, ns string) saver.ListPosition {
		return saver.ListPosition{ID: id, ThreadID: thread, NS: ns}
	}
	// In listing order: the newest id first, whatever its thread or
	// namespace, and one id's checkpoints by thread, then namespace.
	want := []saver.ListPosition{
		pos("0003", "b", ""),
		pos("0002", "a", ""),
		pos("0002", "a", "child:1"),
		pos("0002", "b", ""),
		pos("0001", "a", "child:1"),
		pos("0001", "b", ""),
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, saver.ComparePositions)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("listing order mismatch (-want +got):\n%s", diff)
	}
	for i, p := range want {
		for j, q := range want {
			if got, want := p.Follows(q), i > j; got != want {
				t.Errorf("%+v.Follows(%+v) = %v, want %v", p, q, got, want)
			}
		}
	}
}

func TestSortWrites(t *testing.T) {
	w := func(path, task string, idx int64) saver.Write {
		return saver.Write{TaskPath: path, TaskID: task, Idx: idx}
	}
	want := []saver.Write{
		w("", "b", -1),
		w("", "b", 0),
		w("", "b", 2),
		w("~a", "a", 0),
		w("~a", "c", -3),
		w("~b", "a", 1),
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	saver.SortWrites(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("write order mismatch (-want +got):\n%s", diff)
	}
}
