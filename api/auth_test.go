package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
)

const (
	keyA = "key-for-tenant-a-0123456789"
	keyB = "key-for-tenant-b-0123456789"
)

func TestAuth(t *testing.T) {
	var tenants []string
	s := MustMockServer(t, &apitest.Store{GetTupleFn: func(_ context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
		tenants = append(tenants, ref.Tenant)
		return nil, saver.Errorf(saver.ENOTFOUND, "none")
	}})
	keys, err := api.NewKeys(map[string]string{keyA: "a", keyB: "b"})
	if err != nil {
		t.Fatal(err)
	}
	s.Keys = keys

	get := func(header, value string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/v1/threads/t/checkpoint", nil)
		if header != "" {
			req.Header.Set(header, value)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	for _, tt := range []struct {
		name, header, value string
		status              int
	}{
		{"Missing", "", "", 401},
		{"Wrong", "Authorization", "Bearer key-for-nobody-000000000", 401},
		{"WrongScheme", "Authorization", "Basic " + keyA, 401},
		{"PrefixOfKey", "Authorization", "Bearer " + keyA[:20], 401},
		{"BearerA", "Authorization", "Bearer " + keyA, 404},
		{"LowercaseBearer", "Authorization", "bearer " + keyB, 404},
		{"HeaderKey", "X-API-Key", keyA, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(tt.header, tt.value)
			if rec.Code != tt.status {
				t.Fatalf("Code=%d, want %d (body %s)", rec.Code, tt.status, rec.Body)
			}
			if tt.status == 401 {
				if errorCode(t, rec) != "unauthorized" || rec.Header().Get("WWW-Authenticate") == "" {
					t.Fatalf("401 without code or challenge: %s %v", rec.Body, rec.Header())
				}
			}
		})
	}
	if want := []string{"a", "b", "a"}; len(tenants) != 3 || tenants[0] != want[0] || tenants[1] != want[1] || tenants[2] != want[2] {
		t.Fatalf("store saw tenants %v, want %v", tenants, want)
	}
	// Probes need no key.
	if rec := do(t, s, "GET", "/healthz", "", nil); rec.Code != 200 {
		t.Fatalf("healthz: %d", rec.Code)
	}
}

func TestNewKeys_RefusesWeakKeys(t *testing.T) {
	if _, err := api.NewKeys(map[string]string{"short": "a"}); err == nil {
		t.Fatal("a 5-character key was accepted")
	}
	if _, err := api.NewKeys(map[string]string{keyA: ""}); err == nil {
		t.Fatal("an empty tenant was accepted")
	}
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	s := MustMockServer(t, &apitest.Store{})
	s.TLSCert, s.TLSKey = cert, key
	if err := s.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get("https://" + s.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.TLS == nil || resp.StatusCode != 200 {
		t.Fatalf("TLS=%v status=%d", resp.TLS != nil, resp.StatusCode)
	}

	bad := MustMockServer(t, &apitest.Store{})
	bad.TLSCert, bad.TLSKey = filepath.Join(dir, "missing.pem"), key
	if err := bad.Open("127.0.0.1:0"); err == nil {
		t.Fatal("Open accepted a missing certificate")
	}
}

func writeSelfSigned(t *testing.T, dir string) (string, string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(priv)
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cert, key
}
