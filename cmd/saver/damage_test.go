package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver/faults/damage"
)

// TestServiceOnADamagedStore serves an embedded store whose tables were
// damaged on disk: the reads that reach the damage answer 500 `internal`
// (the damage in the log), and /readyz answers 503 saying the store is
// damaged.
// Before, Pebble's default answer to damage, a Fatalf, panicked: in a
// compaction it took the process down (as here), in a request the recovery
// middleware made it a 500 while /readyz stayed 200.
func TestServiceOnADamagedStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "saver.db")
	m, base := serve(t, db)
	// More than a memtable (4 MiB), so that Pebble writes tables.
	var ids []string
	for i := range 100 {
		id := fmt.Sprintf("%08d", i)
		if resp := post(t, base+"/v1/threads/full/checkpoints", putBody(id)); resp.StatusCode != http.StatusOK {
			t.Fatalf("put %d: %d %s", i, resp.StatusCode, body(resp))
		}
		ids = append(ids, id)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	damage.PebbleTables(t, db)

	m, base = serve(t, db)
	defer m.Close(context.Background())
	// Pebble may meet the damage at once, in a compaction; else a read does.
	// A damaged read costs Pebble seconds (it looks for a flipped bit), so
	// the test stops at the first.
	failed := 0
	for _, id := range ids {
		if failed > 0 {
			break
		}
		resp := get(t, base+"/v1/threads/full/checkpoint?checkpoint_id="+id)
		msg := body(resp)
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusInternalServerError:
			if !strings.Contains(msg, `"code":"internal"`) {
				t.Fatalf("read of a damaged table: %s", msg)
			}
			failed++
		default:
			t.Fatalf("read of checkpoint %s: %d %s", id, resp.StatusCode, msg)
		}
	}
	if failed == 0 {
		t.Fatal("no read met the damage")
	}
	for range 2 {
		resp := get(t, base+"/readyz")
		if msg := body(resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, "damaged") {
			t.Fatalf("/readyz after reads met damage: %d %s", resp.StatusCode, msg)
		}
	}
}
