package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/faults/smallfs"
)

// TestServiceOnAFullDisk serves the embedded store from a small file system
// and fills it: puts are answered 503 `unavailable` with Retry-After and
// /readyz 503 while it is full; once space is freed /readyz is 200 without
// a write, the put refused before succeeds when retried, and every
// acknowledged checkpoint is there, also after a restart. Before, a full
// disk was a 500 `internal` without Retry-After and /readyz stayed 200.
func TestServiceOnAFullDisk(t *testing.T) {
	// Room for the reserve a store keeps free, and some puts besides.
	smallfs.Run(t, 3*embedded.DefaultReserveBytes, func(t *testing.T, dir string) {
		db := filepath.Join(dir, "saver.db")
		m, base := serve(t, db)
		var acked []string
		put := func(id string) *http.Response {
			resp := post(t, base+"/v1/threads/full/checkpoints", putBody(id))
			if resp.StatusCode == http.StatusOK {
				acked = append(acked, id)
			}
			return resp
		}
		for i := range 20 {
			if resp := put(fmt.Sprintf("%08d", i)); resp.StatusCode != http.StatusOK {
				t.Fatalf("put %d: %d %s", i, resp.StatusCode, body(resp))
			}
		}

		free := smallfs.Fill(t, dir)
		var refused *http.Response
		var refusedID string
		for i := 20; i < 300; i++ {
			refusedID = fmt.Sprintf("%08d", i)
			if resp := put(refusedID); resp.StatusCode != http.StatusOK {
				refused = resp
				break
			}
		}
		if refused == nil {
			t.Fatal("280 puts of 64 KiB fitted on a full disk")
		}
		if got := refused.StatusCode; got != http.StatusServiceUnavailable {
			t.Fatalf("put on a full disk: %d %s", got, body(refused))
		}
		if refused.Header.Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
		if msg := body(refused); !strings.Contains(msg, `"code":"unavailable"`) || !strings.Contains(msg, "disk is full") {
			t.Fatalf("put on a full disk: %s", msg)
		}
		for range 3 {
			resp := get(t, base+"/readyz")
			if msg := body(resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, "disk is full") {
				t.Fatalf("/readyz on a full disk: %d %s", resp.StatusCode, msg)
			}
		}
		if resp := get(t, base+"/v1/threads/full/checkpoint?checkpoint_id="+refusedID); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("the refused put is visible: %d %s", resp.StatusCode, body(resp))
		}
		mustServe(t, base, acked)

		free()
		if resp := get(t, base+"/readyz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("/readyz after space was freed: %d %s", resp.StatusCode, body(resp))
		}
		if resp := put(refusedID); resp.StatusCode != http.StatusOK {
			t.Fatalf("put after space was freed: %d %s", resp.StatusCode, body(resp))
		}
		mustServe(t, base, acked)
		if err := m.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		m, base = serve(t, db)
		mustServe(t, base, acked)
		if err := m.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// serve starts the service on the embedded store at db.
func serve(t *testing.T, db string) (*Main, string) {
	t.Helper()
	m := NewMain(io.Discard)
	if err := m.ParseFlags([]string{"-addr", "127.0.0.1:0", "-db", db}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, "http://" + m.server.Addr()
}

// putBody is a put of checkpoint id with a new 64 KiB channel value, so
// that each put needs new pages.
func putBody(id string) []byte {
	b, _ := json.Marshal(map[string]any{
		"checkpoint_ns": "", "checkpoint_id": id, "parent_checkpoint_id": "",
		"checkpoint":       map[string]any{"type": "msgpack", "data": []byte("checkpoint " + id)},
		"metadata":         map[string]any{"source": "loop", "step": 1},
		"channel_versions": map[string]string{"messages": id},
		"blobs": []map[string]any{{"channel": "messages", "version": id,
			"value": map[string]any{"type": "msgpack", "data": bytes.Repeat([]byte(id), 8<<10)}}},
	})
	return b
}

// mustServe checks that every checkpoint in ids is served with its value.
func mustServe(t *testing.T, base string, ids []string) {
	t.Helper()
	for _, id := range ids {
		resp := get(t, base+"/v1/threads/full/checkpoint?checkpoint_id="+id)
		var tuple struct {
			CheckpointID string `json:"checkpoint_id"`
			Values       []struct {
				Value struct {
					Data []byte `json:"data"`
				} `json:"value"`
			} `json:"values"`
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("checkpoint %s: %d %s", id, resp.StatusCode, body(resp))
		}
		if err := json.Unmarshal([]byte(body(resp)), &tuple); err != nil {
			t.Fatal(err)
		}
		if tuple.CheckpointID != id || len(tuple.Values) != 1 || !bytes.Equal(tuple.Values[0].Value.Data, bytes.Repeat([]byte(id), 8<<10)) {
			t.Fatalf("checkpoint %s read back differs", id)
		}
	}
}

func post(t *testing.T, url string, b []byte) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func del(t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("DELETE", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// body reads and closes the response's body.
func body(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b)
}

// TestServiceDeletesOnADiskItFilled fills a small file system with puts to
// two threads until the embedded store refuses them (503, the disk's
// reserve reached), then leaves half the reserve free: DELETE of one thread
// and a prune `delete` of the other succeed, as they are how an operator
// frees the disk, and /readyz stays 503 while puts are still refused.
// Before, both were refused 503 like the puts, so the API could not free
// any space; then the deletion made /readyz 200 with puts still refused.
// With nothing at all free, the DELETE is 503.
func TestServiceDeletesOnADiskItFilled(t *testing.T) {
	smallfs.Run(t, 3*embedded.DefaultReserveBytes, func(t *testing.T, dir string) {
		m, base := serve(t, filepath.Join(dir, "saver.db"))
		defer m.Close(context.Background())
		var refused *http.Response
		for i := 0; i < 2000 && refused == nil; i++ {
			thread := []string{"full", "other"}[i%2]
			resp := post(t, base+"/v1/threads/"+thread+"/checkpoints", putBody(fmt.Sprintf("%08d", i)))
			if resp.StatusCode != http.StatusOK {
				refused = resp
			} else {
				body(resp)
			}
		}
		if refused == nil || refused.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("puts never refused on a full disk: %v", refused)
		}
		body(refused)
		// With nothing free, a deletion is refused too: its log write
		// would fail, and Pebble cannot go on after that.
		free := smallfs.Fill(t, dir)
		if resp := del(t, base+"/v1/threads/full"); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("DELETE of a thread on a disk with nothing free: %d %s", resp.StatusCode, body(resp))
		}
		free()
		// Compactions and other files may leave less than the reserve.
		free = smallfs.FillTo(t, dir, embedded.DefaultReserveBytes/2)
		if resp := del(t, base+"/v1/threads/full"); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE of a thread on a full disk: %d %s", resp.StatusCode, body(resp))
		}
		// The deletion committed, but puts are still refused: not ready.
		if resp := get(t, base+"/readyz"); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("/readyz after a DELETE, half the reserve free: %d %s", resp.StatusCode, body(resp))
		}
		if resp := post(t, base+"/v1/threads/other/checkpoints", putBody("later")); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("put after a DELETE, half the reserve free: %d %s", resp.StatusCode, body(resp))
		}
		resp := post(t, base+"/v1/threads/prune", []byte(`{"thread_ids":["other"],"strategy":"delete"}`))
		if msg := body(resp); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("prune delete on a full disk: %d %s", resp.StatusCode, msg)
		}
		for _, thread := range []string{"full", "other"} {
			resp := get(t, base+"/v1/threads/"+thread+"/checkpoint")
			if msg := body(resp); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("thread %s after its deletion: %d %s", thread, resp.StatusCode, msg)
			}
		}
		free()
		// Ready once the space is there for a put beside what the log still
		// holds to flush: the deletions' flush and compactions run in the
		// background, slower on a loaded machine, so readiness is polled.
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp := get(t, base+"/readyz")
			msg := body(resp)
			if resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz 10 s after space was freed: %d %s", resp.StatusCode, msg)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
