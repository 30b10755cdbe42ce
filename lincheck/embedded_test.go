package lincheck

import (
	"path/filepath"
	"testing"
	"time"
)

// TestEmbeddedKill checks heads, claims and Store items on the embedded
// store while the service is killed with SIGKILL mid-load and started again
// on the same data (SAVER_LIN_FAULTS kills, SAVER_LIN_OPS operations apart,
// SAVER_LIN_CLIENTS clients).
func TestEmbeddedKill(t *testing.T) {
	sz := runSizes(t)
	dir := t.TempDir()
	svc := &Service{Bin: binary(t), Dir: dir, Args: []string{"-db", filepath.Join(dir, "saver.db")}}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Kill() })
	h := NewHistory()
	l := &Load{History: h, Clients: sz.Clients, Target: svc.URL, Timeout: sz.Timeout}
	start := time.Now()
	stop := runLoad(t.Context(), l)
	for range sz.Faults {
		// New keys half-way, so that each key's history spans a kill.
		if err := l.WaitOps(t.Context(), h.Len()+sz.Ops/2); err != nil {
			stop()
			t.Fatal(err)
		}
		l.NextEpoch()
		if err := l.WaitOps(t.Context(), h.Len()+sz.Ops/2); err != nil {
			stop()
			t.Fatal(err)
		}
		if err := svc.Restart(t.Context()); err != nil {
			stop()
			t.Fatal(err)
		}
	}
	if err := l.WaitOps(t.Context(), h.Len()+sz.Ops/2); err != nil {
		stop()
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := l.ReadAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("LINCHECK embedded: %d kills, %s, load %s", sz.Faults, h.Stats(), time.Since(start).Round(time.Millisecond))
	mustLinearizable(t, h, "embedded-kill", sz.Check)
}
