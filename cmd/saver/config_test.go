package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(c Config) bool
		wantErr string
	}{
		{"Defaults", nil, nil, func(c Config) bool {
			return c.Addr == "127.0.0.1:7878" && c.Store == StoreEmbedded && c.DBPath == "data/saver.db"
		}, ""},
		{"EnvOverrides", map[string]string{"SAVER_ADDR": "127.0.0.1:0", "SAVER_DB": "x.db", "SAVER_REQUEST_TIMEOUT": "5s"}, nil,
			func(c Config) bool {
				return c.Addr == "127.0.0.1:0" && c.DBPath == "x.db" && c.RequestTimeout == 5*time.Second
			}, ""},
		{"FlagsOverrideEnv", map[string]string{"SAVER_DB": "env.db"}, []string{"-db", "flag.db", "-page-size", "7"},
			func(c Config) bool { return c.DBPath == "flag.db" && c.PageSize == 7 }, ""},
		{"BadDuration", map[string]string{"SAVER_REQUEST_TIMEOUT": "soon"}, nil, nil, "SAVER_REQUEST_TIMEOUT"},
		{"BadStore", nil, []string{"-store", "redis"}, nil, "store \"redis\""},
		{"BadAddr", nil, []string{"-addr", "nowhere"}, nil, "addr \"nowhere\""},
		{"BadPageSize", nil, []string{"-page-size", "0"}, nil, "page-size 0"},
		{"BadLevel", nil, []string{"-log-level", "loud"}, nil, "log-level"},
		{"ConnectionLimits", map[string]string{"SAVER_IDLE_TIMEOUT": "5s", "SAVER_MAX_CONNS": "64"}, []string{"-body-timeout", "10s", "-write-timeout", "41s", "-read-header-timeout", "2s"},
			func(c Config) bool {
				return c.IdleTimeout == 5*time.Second && c.MaxConns == 64 && c.BodyTimeout == 10*time.Second &&
					c.WriteTimeout == 41*time.Second && c.ReadHeaderTimeout == 2*time.Second
			}, ""},
		{"WriteTimeoutTooShort", nil, []string{"-write-timeout", "80s"}, nil, "write-timeout 1m20s: must be more than"},
		{"ZeroIdleTimeout", nil, []string{"-idle-timeout", "0s"}, nil, "timeouts must be positive"},
		{"NoConnections", nil, []string{"-max-conns", "0"}, nil, "max-conns 0"},
		{"BodiesBudget", map[string]string{"SAVER_MAX_BODIES": "1048576"}, []string{"-max-body", "65536"},
			func(c Config) bool { return c.MaxBodiesBytes == 1<<20 && c.MaxBodyBytes == 64<<10 }, ""},
		{"BodiesBudgetUnderOneBody", map[string]string{"SAVER_MAX_BODIES": "1024"}, nil, nil, "max-bodies 1024: must be at least max-body"},
		// A page is held twice: one over half the response budget could never be answered.
		{"HistoryPageOverHalfTheResponses", map[string]string{"SAVER_MAX_RESPONSES": "67108864", "SAVER_HISTORY_PAGE": "33554433"}, nil, nil, "history-page 33554433: must be between 1 and half of max-responses"},
		{"ClientLimitsFollowTheWhole", map[string]string{"SAVER_MAX_CONNS": "64"}, nil,
			func(c Config) bool {
				return c.ConnsPerClient() == 8 && c.ClientRequests() == 16 && c.ClientBodies() == c.MaxBodiesBytes/4
			}, ""},
		{"ClientLimitsSet", map[string]string{"SAVER_MAX_CONNS_PER_CLIENT": "0"}, []string{"-max-client-requests", "5", "-max-body", "65536", "-max-client-bodies", "65536"},
			func(c Config) bool {
				return c.ConnsPerClient() == 0 && c.ClientRequests() == 5 && c.ClientBodies() == 64<<10
			}, ""},
		{"ClientBodiesUnderOneBody", nil, []string{"-max-client-bodies", "1024"}, nil, "max-client-bodies 1024: must be between max-body"},
		{"ClientBodiesOverAll", nil, []string{"-max-bodies", "67108864", "-max-client-bodies", "67108865"}, nil, "max-client-bodies 67108865"},
		{"ConnsPerClientOverAll", nil, []string{"-max-conns", "4", "-max-conns-per-client", "5"}, nil, "max-conns-per-client 5: must be at most max-conns"},
		{"NegativeClientRequests", nil, []string{"-max-client-requests", "-1"}, nil, "not a count"},
		{"StrayArgument", nil, []string{"extra"}, nil, "unexpected arguments"},
		{"UnknownFlag", nil, []string{"-nope"}, nil, "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMain(io.Discard)
			err := m.ParseFlags(tt.args, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err=%v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(m.Config) {
				t.Fatalf("config %+v does not hold", m.Config)
			}
		})
	}
}

func TestSettingsHaveFlagsAndHelp(t *testing.T) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	for _, s := range settings() {
		if fs.Lookup(s.flag) == nil || s.help == "" || !strings.HasPrefix(s.env, "SAVER_") && !strings.HasPrefix(s.env, "LOG_") {
			t.Fatalf("setting %+v incomplete", s.env)
		}
	}
}

// TestREADMEConfigTable keeps the README's configuration table honest: every
// setting appears there with its flag and default.
func TestREADMEConfigTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	for _, s := range settings() {
		def := s.get(&c)
		if def == "" {
			def = "none"
		}
		row := fmt.Sprintf("| `%s` | `-%s` | ", s.env, s.flag)
		i := strings.Index(string(b), row)
		if i < 0 {
			t.Fatalf("README has no row starting %q", row)
		}
		line := string(b[i:])
		line = line[:strings.IndexByte(line, '\n')]
		if !strings.Contains(line, def) {
			t.Fatalf("README row %q does not show the default %q", line, def)
		}
	}
}

func TestLoadKeys(t *testing.T) {
	files := map[string]string{
		"keys.txt": "# ops keys\ntenant-a: aaaaaaaaaaaaaaaaaaaa\n\ntenant-b:bbbbbbbbbbbbbbbbbbbb\n",
		"bad.txt":  "tenant-a aaaaaaaaaaaaaaaaaaaa\n",
	}
	read := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return []byte(b), nil
		}
		return nil, os.ErrNotExist
	}
	tests := []struct {
		name    string
		c       Config
		want    map[string]string
		wantErr string
	}{
		{"None", Config{}, map[string]string{}, ""},
		{"Env", Config{APIKeys: "a:k1111111111111111, b:k2222222222222222"}, map[string]string{"k1111111111111111": "a", "k2222222222222222": "b"}, ""},
		{"File", Config{APIKeysFile: "keys.txt"}, map[string]string{"aaaaaaaaaaaaaaaaaaaa": "tenant-a", "bbbbbbbbbbbbbbbbbbbb": "tenant-b"}, ""},
		{"BadLineNamesLineNotKey", Config{APIKeysFile: "bad.txt"}, nil, "bad.txt line 1: want tenant:key"},
		{"MissingFile", Config{APIKeysFile: "nope.txt"}, nil, "api-keys-file"},
		{"SameKeyTwoTenants", Config{APIKeys: "a:k1111111111111111,b:k1111111111111111"}, nil, "the same key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.LoadKeys(read)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err=%v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "aaaaaaaa") {
					t.Fatalf("error %q shows a key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRun_RefusesOpenAddressWithoutKeys(t *testing.T) {
	m := NewMain(io.Discard)
	if err := m.ParseFlags([]string{"-addr", "0.0.0.0:0", "-db", t.TempDir() + "/s.db"}, env(nil)); err != nil {
		t.Fatal(err)
	}
	err := m.Run(t.Context())
	defer m.Close(t.Context())
	if err == nil || !strings.Contains(err.Error(), "without API keys") {
		t.Fatalf("err=%v, want a refusal", err)
	}

	m = NewMain(io.Discard)
	keys := map[string]string{"SAVER_API_KEYS": "acme:0123456789abcdef0123"}
	if err := m.ParseFlags([]string{"-addr", "0.0.0.0:0", "-db", t.TempDir() + "/s.db"}, env(keys)); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); err != nil {
		t.Fatalf("with keys: %v", err)
	}
	m.Close(t.Context())
}

// TestRun_RefusesABadOperatorKey: the operator key opens every tenant's
// data, so the service refuses to start with one that is a tenant's key,
// too short, or not alone in its file; the errors never show the key.
func TestRun_RefusesABadOperatorKey(t *testing.T) {
	tenantKey := "acme-key-0123456789abcdef"
	tests := []struct {
		name, file, want string
	}{
		{"TenantsKey", tenantKey + "\n", `the operator key is also tenant "acme"'s API key`},
		{"Short", "short\n", "is 5 characters long; use at least 16"},
		{"TwoKeys", "operator-key-0123456789\nanother-key-0123456789\n", "more than one key"},
		{"Empty", "# no key yet\n\n", "no key in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "operator")
			if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			m := NewMain(io.Discard)
			vars := map[string]string{"SAVER_API_KEYS": "acme:" + tenantKey, "SAVER_OPERATOR_KEY_FILE": file}
			if err := m.ParseFlags([]string{"-addr", "127.0.0.1:0", "-db", t.TempDir() + "/s.db"}, env(vars)); err != nil {
				t.Fatal(err)
			}
			err := m.Run(t.Context())
			defer m.Close(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err=%v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "0123456789") {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
}
