package lincheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestCheckerCatchesSkippedHeadCheck shows that the checker can fail: the
// service built with the faulthook tag skips the head's condition on the
// embedded store, so two writers that read the same head both win. The same
// load as TestEmbeddedKill (without kills) must then be found not
// linearizable on heads, with the history drawn; claims and items, which the
// hook leaves alone, stay linearizable.
func TestCheckerCatchesSkippedHeadCheck(t *testing.T) {
	sz := runSizes(t)
	dir := t.TempDir()
	svc := &Service{Bin: binary(t, "faulthook"), Dir: dir, Args: []string{"-db", filepath.Join(dir, "saver.db")}}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Kill() })
	h := NewHistory()
	l := &Load{History: h, Clients: sz.Clients, Target: svc.URL, Timeout: sz.Timeout}
	stop := runLoad(t.Context(), l)
	if err := l.WaitOps(t.Context(), sz.Ops); err != nil {
		stop()
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("LINCHECK broken head check: %s", h.Stats())
	t.Setenv("SAVER_LIN_OUT", t.TempDir()) // the expected drawing is not a finding
	results := check(t, h, "faulthook", sz.Check)
	if r := results[KindHead]; r.Result != porcupine.Illegal {
		t.Fatalf("heads with the condition skipped: porcupine says %s, want %s", r.Result, porcupine.Illegal)
	} else if st, err := os.Stat(r.Visualization); err != nil || st.Size() == 0 {
		t.Fatalf("no drawing of the violation: %v", err)
	}
	for _, kind := range []string{KindLedger, KindItem} {
		if r := results[kind]; r.Result != porcupine.Ok {
			t.Errorf("%s: %s, want Ok (the hook only skips the head's condition)", kind, r.Result)
		}
	}
}
