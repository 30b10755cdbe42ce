package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

const (
	tenantKey   = "tenant-key-0123456789"
	operatorKey = "operator-key-0123456789"
)

// backupServer is a server on a new embedded store with its backup route,
// with the tenant and operator keys given (nil: none).
func backupServer(t *testing.T, tenants, operator map[string]string) (*api.Server, *embedded.Store) {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "saver.db"), embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	storetest.MustPutCheckpoint(t, st, storetest.NewCheckpoint(storetest.NewRef(), "1"))
	s := MustServer(t, st)
	s.Capabilities = embeddedCapabilities(st)
	for _, k := range []struct {
		m   map[string]string
		set **api.Keys
	}{{tenants, &s.Keys}, {operator, &s.OperatorKey}} {
		if k.m != nil {
			keys, err := api.NewKeys(k.m)
			if err != nil {
				t.Fatal(err)
			}
			*k.set = keys
		}
	}
	return s, st
}

func postBackup(t *testing.T, s *api.Server, key string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/admin/backup", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// TestBackupRouteAuthority: the backup holds every tenant's data, so only
// the operator key opens it; a tenant key never does, and with tenant keys
// but no operator key the route is closed. With no keys at all (a service
// on loopback) it is open, as every route is.
func TestBackupRouteAuthority(t *testing.T) {
	tenants := map[string]string{tenantKey: "acme"}
	operator := map[string]string{operatorKey: "operator"}
	tests := []struct {
		name              string
		tenants, operator map[string]string
		key               string
		status            int
		message           string
	}{
		{"OperatorKey", tenants, operator, operatorKey, http.StatusOK, ""},
		{"TenantKey", tenants, operator, tenantKey, http.StatusUnauthorized, "The operator key is missing or wrong"},
		{"NoKey", tenants, operator, "", http.StatusUnauthorized, "The operator key is missing or wrong"},
		{"WrongKey", tenants, operator, operatorKey + "x", http.StatusUnauthorized, "The operator key is missing or wrong"},
		{"TenantKeyWithoutOperatorKey", tenants, nil, tenantKey, http.StatusUnauthorized, "The operator routes are closed"},
		{"OperatorKeyWithoutTenantKeys", nil, operator, "", http.StatusUnauthorized, "The operator key is missing or wrong"},
		{"NoKeysAtAll", nil, nil, "", http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := backupServer(t, tt.tenants, tt.operator)
			rec := postBackup(t, s, tt.key)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.message) {
				t.Fatalf("%d %s; want %d %q", rec.Code, rec.Body, tt.status, tt.message)
			}
			if rec.Code != http.StatusOK {
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/x-tar" {
				t.Fatalf("Content-Type %q", ct)
			}
			if _, err := embedded.ReadBackup(rec.Body, t.TempDir()); err != nil {
				t.Fatalf("the answer is not a whole backup: %v", err)
			}
		})
	}
}

// TestBackupRouteOneAtATime: while a backup streams, a second is answered
// 409 with a message that says why.
func TestBackupRouteOneAtATime(t *testing.T) {
	s, st := backupServer(t, nil, map[string]string{operatorKey: "operator"})
	r, w := io.Pipe()
	first := make(chan error, 1)
	go func() { first <- st.Backup(context.Background(), w) }()
	if _, err := r.Read(make([]byte, 1)); err != nil { // the backup has begun
		t.Fatal(err)
	}
	rec := postBackup(t, s, operatorKey)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "A backup of this store is already running") {
		t.Fatalf("a second backup: %d %s", rec.Code, rec.Body)
	}
	r.CloseWithError(errors.New("done"))
	<-first
	if rec := postBackup(t, s, operatorKey); rec.Code != http.StatusOK {
		t.Fatalf("a backup once the first ended: %d %s", rec.Code, bytes.TrimSpace(rec.Body.Bytes()))
	}
}

// TestBackupRouteOutlivesTheRequestTimeout: a copy of the whole store takes
// as long as the store is large, so the request timeout, which bounds store
// work, does not end it (handleBackup bounds it by progress instead).
func TestBackupRouteOutlivesTheRequestTimeout(t *testing.T) {
	s, _ := backupServer(t, nil, nil)
	s.RequestTimeout = time.Nanosecond
	rec := postBackup(t, s, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if _, err := embedded.ReadBackup(rec.Body, t.TempDir()); err != nil {
		t.Fatalf("the answer is not a whole backup: %v", err)
	}
}
