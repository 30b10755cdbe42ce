package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	backupTenantKey   = "tenant-key-0123456789"
	backupOperatorKey = "operator-key-0123456789"
)

// serveWithKeys starts the service on the embedded store at db with a tenant
// key (tenant "acme") and the operator key, and returns it, its base URL
// and the operator key's file.
func serveWithKeys(t *testing.T, db string) (*Main, string, string) {
	t.Helper()
	dir := t.TempDir()
	keys, operator := filepath.Join(dir, "keys"), filepath.Join(dir, "operator")
	if err := os.WriteFile(keys, []byte("acme:"+backupTenantKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(operator, []byte("# saver's operator key\n"+backupOperatorKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewMain(io.Discard)
	args := []string{"-addr", "127.0.0.1:0", "-db", db, "-api-keys-file", keys, "-operator-key-file", operator}
	if err := m.ParseFlags(args, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, "http://" + m.server.Addr(), operator
}

// call sends a JSON request as tenant acme and returns the status and body.
func call(client *http.Client, method, url string, in any) (int, []byte, error) {
	var r io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+backupTenantKey)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// acked is a write the service acknowledged: what it was and when the
// answer came.
type acked struct {
	kind, worker string
	n            int
	at           time.Time
}

// loadWrite does write n of one kind for worker: a checkpoint with a 32 KiB
// channel value, a ledger claim then its completion, or a Store item.
func loadWrite(client *http.Client, base, kind, worker string, n int) error {
	id := fmt.Sprintf("%08d", n)
	expect := func(status int, b []byte, err error, want int) error {
		if err != nil {
			return err
		}
		if status != want {
			return fmt.Errorf("%s %s %d: %d %s", kind, worker, n, status, b)
		}
		return nil
	}
	switch kind {
	case "checkpoint":
		status, b, err := call(client, "POST", base+"/v1/threads/"+worker+"/checkpoints", map[string]any{
			"checkpoint_ns": "", "checkpoint_id": id, "parent_checkpoint_id": "",
			"checkpoint":       map[string]any{"type": "msgpack", "data": []byte("checkpoint " + id)},
			"metadata":         map[string]any{"source": "loop", "step": n},
			"channel_versions": map[string]string{"messages": id},
			"blobs": []map[string]any{{"channel": "messages", "version": id,
				"value": map[string]any{"type": "msgpack", "data": bytes.Repeat([]byte(id), 4096)}}},
		})
		return expect(status, b, err, http.StatusOK)
	case "ledger":
		key := worker + "-" + id
		status, b, err := call(client, "POST", base+"/v1/idempotency/claim", map[string]any{"key": key})
		if err := expect(status, b, err, http.StatusOK); err != nil {
			return err
		}
		var c struct{ State, Token string }
		if err := json.Unmarshal(b, &c); err != nil || c.State != "claimed" {
			return fmt.Errorf("claim %s: %s %v", key, b, err)
		}
		status, b, err = call(client, "POST", base+"/v1/idempotency/complete", map[string]any{
			"key": key, "token": c.Token, "result": map[string]any{"type": "msgpack", "data": []byte("result " + key)}})
		return expect(status, b, err, http.StatusNoContent)
	case "item":
		status, b, err := call(client, "POST", base+"/v1/store/batch", map[string]any{"ops": []map[string]any{
			{"op": "put", "namespace": []string{"load", worker}, "key": id, "value": map[string]any{"n": n}}}})
		return expect(status, b, err, http.StatusOK)
	}
	return fmt.Errorf("unknown kind %q", kind)
}

// mustHold checks that the service at base holds write a.
func mustHold(t *testing.T, client *http.Client, base string, a acked) {
	t.Helper()
	id := fmt.Sprintf("%08d", a.n)
	switch a.kind {
	case "checkpoint":
		status, b, err := call(client, "GET", base+"/v1/threads/"+a.worker+"/checkpoint?checkpoint_id="+id, nil)
		var tuple struct {
			CheckpointID string `json:"checkpoint_id"`
			Values       []struct {
				Value struct {
					Data []byte `json:"data"`
				} `json:"value"`
			} `json:"values"`
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(b, &tuple) != nil || tuple.CheckpointID != id ||
			len(tuple.Values) != 1 || !bytes.Equal(tuple.Values[0].Value.Data, bytes.Repeat([]byte(id), 4096)) {
			t.Fatalf("checkpoint %s/%s acknowledged before the backup: %d %.200s %v", a.worker, id, status, b, err)
		}
	case "ledger":
		key := a.worker + "-" + id
		status, b, err := call(client, "POST", base+"/v1/idempotency/claim", map[string]any{"key": key})
		var c struct {
			State  string
			Result struct{ Data []byte }
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(b, &c) != nil || c.State != "completed" ||
			string(c.Result.Data) != "result "+key {
			t.Fatalf("ledger key %s completed before the backup: %d %s %v", key, status, b, err)
		}
	case "item":
		status, b, err := call(client, "POST", base+"/v1/store/batch", map[string]any{"ops": []map[string]any{
			{"op": "get", "namespace": []string{"load", a.worker}, "key": id}}})
		var res struct {
			Results []struct {
				Item *struct{ Value struct{ N int } }
			}
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(b, &res) != nil || len(res.Results) != 1 ||
			res.Results[0].Item == nil || res.Results[0].Item.Value.N != a.n {
			t.Fatalf("item %s/%s put before the backup: %d %s %v", a.worker, id, status, b, err)
		}
	}
}

// TestBackupUnderLoad runs writers of checkpoints, ledger completions and
// Store items against the service, runs `saver backup` (the binary) while
// they write, restores the backup with `saver restore` into a new path,
// serves it, and finds there every write acknowledged before the backup
// began. Writes carry on during the backup, and some are acknowledged
// while it runs.
func TestBackupUnderLoad(t *testing.T) {
	dir := t.TempDir()
	_, base, operatorFile := serveWithKeys(t, filepath.Join(dir, "saver.db"))
	client := &http.Client{}

	var (
		mu    sync.Mutex
		acks  []acked
		wg    sync.WaitGroup
		fails = make(chan error, 16)
	)
	stop := make(chan struct{})
	kinds := []string{"checkpoint", "checkpoint", "ledger", "item"}
	for w, kind := range kinds {
		worker := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := loadWrite(client, base, kind, worker, n); err != nil {
					fails <- err
					return
				}
				mu.Lock()
				acks = append(acks, acked{kind, worker, n, time.Now()})
				mu.Unlock()
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	for count() < 800 { // every writer under way, and tables written (a memtable is 4 MiB)
		select {
		case err := <-fails:
			t.Fatal(err)
		case <-time.After(10 * time.Millisecond):
		}
	}

	began := time.Now()
	code, out := runProcess(t, 2*time.Minute, "backup", "-url", base, "-operator-key-file", operatorFile, filepath.Join(dir, "backup"))
	ended := time.Now()
	close(stop)
	wg.Wait()
	select {
	case err := <-fails:
		t.Fatal(err)
	default:
	}
	if code != 0 || !strings.Contains(out, "backed up the pebble store into") {
		t.Fatalf("saver backup: exit %d\n%s", code, out)
	}
	var before []acked
	during := 0
	for _, a := range acks {
		switch {
		case a.at.Before(began):
			before = append(before, a)
		case a.at.Before(ended):
			during++
		}
	}
	if during == 0 {
		t.Fatal("no write was acknowledged while the backup ran: the test did not back up under load")
	}
	t.Logf("%d writes acknowledged before the backup began, %d while it ran; %s", len(before), during, strings.TrimSpace(out))

	restored := filepath.Join(t.TempDir(), "restored", "saver.db")
	if code, out := runProcess(t, 2*time.Minute, "restore", "-db", restored, filepath.Join(dir, "backup")); code != 0 {
		t.Fatalf("saver restore: exit %d\n%s", code, out)
	}
	_, rbase, _ := serveWithKeys(t, restored)
	for _, a := range before {
		mustHold(t, client, rbase, a)
	}
}

// TestBackupRefusals: saver backup refuses a DIR that holds anything and a
// caller without the operator key (a tenant's key included); saver restore
// refuses a store already at the path, even with -force while the service
// holds it, and a folder that is not a store. Each leaves what is there as
// it was and says why.
func TestBackupRefusals(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "saver.db")
	m, base, operatorFile := serveWithKeys(t, db)
	if err := loadWrite(&http.Client{}, base, "checkpoint", "t", 1); err != nil {
		t.Fatal(err)
	}
	tenantFile := filepath.Join(dir, "tenant-key")
	if err := os.WriteFile(tenantFile, []byte(backupTenantKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "full")
	if err := os.Mkdir(full, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "notes"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if code, out := runProcess(t, time.Minute, "backup", "-url", base, "-operator-key-file", operatorFile, good); code != 0 {
		t.Fatalf("saver backup: exit %d\n%s", code, out)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o750); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"NonEmptyDir", []string{"backup", "-url", base, "-operator-key-file", operatorFile, full},
			full + " is not empty"},
		{"NoKey", []string{"backup", "-url", base, filepath.Join(dir, "b1")},
			"The operator key is missing or wrong: send Authorization: Bearer <operator key>. (401 unauthorized)"},
		{"TenantKey", []string{"backup", "-url", base, "-operator-key-file", tenantFile, filepath.Join(dir, "b2")},
			"The operator key is missing or wrong: send Authorization: Bearer <operator key>. (401 unauthorized)"},
		{"LocalWhileServed", []string{"backup", "-db", db, filepath.Join(dir, "b3")},
			"a running service holds the store: back it up through the service (-url)"},
		{"RestoreOverAStore", []string{"restore", "-db", db, good},
			db + " already holds a store; stop the service and use -force"},
		{"RestoreOverAServedStore", []string{"restore", "-db", db, "-force", good},
			"stop the service before restoring"},
		{"RestoreNotAStore", []string{"restore", "-db", filepath.Join(dir, "new.db"), empty},
			empty + " is not a store that opens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runProcess(t, time.Minute, tt.args...)
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d; want 2 and %q:\n%s", code, tt.want, out)
			}
		})
	}
	for _, b := range []string{"b1", "b2", "b3", "new.db"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err == nil {
			t.Errorf("%s was made by a refused command", b)
		}
	}
	if b, err := os.ReadFile(filepath.Join(full, "notes")); err != nil || string(b) != "mine" {
		t.Errorf("the non-empty DIR changed: %q %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary folders left: %v", left)
	}
	// The service still serves the store it held.
	if err := loadWrite(&http.Client{}, base, "checkpoint", "t", 2); err != nil {
		t.Fatal(err)
	}

	// Once the service stops, -force moves the store aside and restores.
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out := runProcess(t, time.Minute, "restore", "-db", db, "-force", good)
	if code != 0 || !strings.Contains(out, "the store that was at "+db+" is at "+db+".before-restore-") {
		t.Fatalf("restore -force: exit %d\n%s", code, out)
	}
	aside, _ := filepath.Glob(db + ".before-restore-*")
	if len(aside) != 1 {
		t.Fatalf("the replaced store: %v", aside)
	}
}
