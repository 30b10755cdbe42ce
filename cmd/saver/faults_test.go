package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/saver-dev/saver/faults"
)

func withFaultsEnv(t *testing.T, env map[string]string) {
	t.Helper()
	old := faultsGetenv
	faultsGetenv = func(k string) string { return env[k] }
	t.Cleanup(func() { faultsGetenv = old })
}

func TestInjectFaults_OffByDefault(t *testing.T) {
	withFaultsEnv(t, nil)
	var cfg aws.Config
	var logs bytes.Buffer
	if err := injectFaults(&cfg, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPClient != nil || logs.Len() != 0 {
		t.Fatalf("without SAVER_FAULTS the config changed (client %v) or it logged %q", cfg.HTTPClient, logs.String())
	}
}

func TestInjectFaults_BadSpec(t *testing.T) {
	withFaultsEnv(t, map[string]string{envFaults: "dynamodb:throttle=2"})
	var cfg aws.Config
	err := injectFaults(&cfg, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	if err == nil || !strings.Contains(err.Error(), envFaults) {
		t.Fatalf("bad spec: error %v, want one naming %s", err, envFaults)
	}
}

func TestInjectFaults_WrapsClientAndWritesStats(t *testing.T) {
	stats := filepath.Join(t.TempDir(), "faults.json")
	withFaultsEnv(t, map[string]string{envFaults: "dynamodb:throttle=1,count=1", envFaultsStats: stats})
	var cfg aws.Config
	var logs bytes.Buffer
	if err := injectFaults(&cfg, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "TEST-ONLY") {
		t.Fatalf("no warning logged: %q", logs.String())
	}
	client, ok := cfg.HTTPClient.(*http.Client)
	if !ok {
		t.Fatalf("HTTPClient is %T", cfg.HTTPClient)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("first request: status %d, want the injected 400", resp.StatusCode)
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	var got faults.Stats
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Requests["dynamodb"] != 1 || got.Injected["dynamodb:throttle"] != 1 {
		t.Fatalf("stats file %s", b)
	}
}
