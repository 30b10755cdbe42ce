// Command saver runs the checkpoint store as an HTTP service.
//
//	saver [serve] [flags]   start the service (the default command)
//	saver init [flags]      create the DynamoDB table and S3 bucket if missing
//	saver gc [flags]        delete expired items (embedded) or orphaned S3 objects, once
//	saver migrate [flags]   move an embedded bbolt file to Pebble
//	saver backup DIR        copy the embedded store, from the running service or -db
//	saver restore DIR       put a backup in place as the store at -db
//	saver inspect COMMAND   look at a running service's threads (see -help)
//	saver version           print the version
//
// Every command takes the same flags and environment (see -help).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/metrics"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "saver:", err)
		}
		os.Exit(2)
	}
}

// Main is the running service: its configuration and the parts it wired.
type Main struct {
	Config Config
	Logger *slog.Logger

	logOut io.Writer
	store  saver.Store      // what the server serves
	caps   api.Capabilities // what store offers beyond saver.Store
	closer io.Closer        // closes the store once the server is done
	server *api.Server
	stop   context.CancelFunc // ends background work (the sweeper)
}

// NewMain returns a Main with the default configuration, logging to logOut.
func NewMain(logOut io.Writer) *Main {
	return &Main{Config: DefaultConfig(), logOut: logOut}
}

// ParseFlags reads the environment, then flags, then validates the result.
func (m *Main) ParseFlags(args []string, getenv func(string) string) error {
	c, err := ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	m.Config = c
	fs := flag.NewFlagSet("saver serve", flag.ContinueOnError)
	fs.SetOutput(m.logOut)
	m.Config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return m.Config.Validate()
}

func (m *Main) initLogger() {
	level, _ := parseLevel(m.Config.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if m.Config.LogFormat == "json" {
		m.Logger = slog.New(slog.NewJSONHandler(m.logOut, opts))
	} else {
		m.Logger = slog.New(slog.NewTextHandler(m.logOut, opts))
	}
}

// Run opens the store and starts serving. Listen errors come back here.
func (m *Main) Run(ctx context.Context) error {
	m.initLogger()
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	m.stop = stop
	var mx *metrics.Metrics
	if m.Config.Metrics {
		mx = metrics.New()
	}
	if err := m.openStore(ctx, bg, mx); err != nil {
		return err
	}

	keyMap, err := m.Config.LoadKeys(os.ReadFile)
	if err != nil {
		return err
	}
	keys, err := api.NewKeys(keyMap)
	if err != nil {
		return err
	}
	operator, err := m.operatorKey(keyMap)
	if err != nil {
		return err
	}
	if keys.Len() == 0 && !isLoopback(m.Config.Addr) {
		return fmt.Errorf("refusing to serve %s without API keys: anyone who can reach it could read and change every thread; set SAVER_API_KEYS_FILE or bind to 127.0.0.1", m.Config.Addr)
	}

	m.server = m.newServer(m.store, m.caps)
	m.server.Keys, m.server.OperatorKey = keys, operator
	if mx != nil {
		m.server.Observer, m.server.Metrics = mx, mx.Handler()
	}
	if err := m.server.Open(m.Config.Addr); err != nil {
		return err
	}
	addr := m.server.Addr()
	if m.Config.AddrFile != "" {
		if err := writeFileAtomic(m.Config.AddrFile, []byte(addr+"\n")); err != nil {
			return fmt.Errorf("addr-file: %w", err)
		}
	}
	if keys.Len() == 0 {
		m.Logger.Warn("authentication is off: no API keys configured, so the service accepts requests on loopback only", "addr", addr)
	}
	m.Logger.Info("saver listening", "addr", addr, "store", m.Config.Store, "tls", m.Config.TLSCert != "", "tenants_with_keys", keys.Len(), "version", version)
	return nil
}

// operatorKey loads the operator key, which must be no tenant's key (in
// keyMap): a tenant holding it would hold every tenant's data.
func (m *Main) operatorKey(keyMap map[string]string) (*api.Keys, error) {
	key, err := m.Config.LoadOperatorKey(os.ReadFile)
	if err != nil || key == "" {
		return nil, err
	}
	if tenant, ok := keyMap[key]; ok {
		return nil, fmt.Errorf("operator-key-file: the operator key is also tenant %q's API key; give the operator a key of its own", tenant)
	}
	k, err := api.NewKeys(map[string]string{key: "operator"})
	if err != nil {
		return nil, fmt.Errorf("operator-key-file: %w", err)
	}
	return k, nil
}

// embeddedCapabilities are what the embedded store offers beyond saver.Store:
// all of them.
func embeddedCapabilities(st *embedded.Store) api.Capabilities {
	return api.Capabilities{Tree: st, Trees: st, Ledger: st, Expirer: st, Items: st, Pinger: st, Backup: st, HeadGuard: true}
}

// openStore opens the configured store with the capabilities it is wired
// with, and starts its background work on bg.
func (m *Main) openStore(ctx, bg context.Context, mx *metrics.Metrics) error {
	switch m.Config.Store {
	case StoreEmbedded:
		st, err := embedded.Open(m.Config.DBPath, embedded.WithLogger(m.Logger), embedded.WithReserve(m.Config.DiskReserve),
			embedded.WithTombstoneLifetime(m.Config.TombstoneLifetime), embedded.WithTreeCache(m.Config.TreeCacheNodes))
		if err != nil {
			return err
		}
		m.store, m.caps, m.closer = st, embeddedCapabilities(st), st
		if m.Config.SweepEvery > 0 {
			go sweepEmbedded(bg, st, m.Config.SweepEvery, m.Logger.With("component", "sweeper"), mx)
		}
	case StoreDynamoDB:
		st, err := openAWS(ctx, m.Config, m.Logger)
		if err != nil {
			return err
		}
		m.store, m.caps, m.closer = st.DB, st.capabilities(), st
		if m.Config.Init {
			if err := st.Init(ctx); err != nil {
				return err
			}
		}
		if w := st.sweeper(); w != nil && m.Config.SweepEvery > 0 {
			go runSweeper(bg, w, m.Config.SweepEvery, m.Config.SweepGrace, m.Logger.With("component", "sweeper"), mx)
		}
		if mx != nil {
			mx.RegisterCounts("saver_dynamodb_requests_total", "DynamoDB requests by operation.", "operation", st.Counter.Snapshot)
			mx.RegisterCounts("saver_s3_requests_total", "S3 requests by operation.", "operation", st.S3Counter.Snapshot)
		}
	}
	return nil
}

// newServer returns the API server on store, wired with caps and
// configured: the capabilities are the ones the store was opened with, never
// looked for in store, so a store wrapped in another keeps them.
func (m *Main) newServer(store saver.Store, caps api.Capabilities) *api.Server {
	s := api.NewServer(store, m.Logger)
	s.Capabilities = caps
	s.TLSCert, s.TLSKey = m.Config.TLSCert, m.Config.TLSKey
	s.MaxBodyBytes, s.MaxBodiesBytes = m.Config.MaxBodyBytes, m.Config.MaxBodiesBytes
	s.MaxClientBodiesBytes, s.MaxClientRequests = m.Config.ClientBodies(), m.Config.ClientRequests()
	s.MaxResponsesBytes, s.HistoryPageBytes = m.Config.MaxResponsesBytes, m.Config.HistoryPageBytes
	s.PageSize = m.Config.PageSize
	s.RequestTimeout = m.Config.RequestTimeout
	s.ReadHeaderTimeout, s.BodyTimeout = m.Config.ReadHeaderTimeout, m.Config.BodyTimeout
	s.WriteTimeout, s.IdleTimeout = m.Config.WriteTimeout, m.Config.IdleTimeout
	s.MaxConns, s.MaxConnsPerClient = m.Config.MaxConns, m.Config.ConnsPerClient()
	s.TTL = m.Config.TTL
	return s
}

// Close drains in-flight requests for up to ShutdownTimeout, then closes the
// store so that every acknowledged write is on disk.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	if m.stop != nil {
		m.stop()
	}
	if m.server != nil {
		ctx, cancel := context.WithTimeout(ctx, m.Config.ShutdownTimeout)
		defer cancel()
		errs = append(errs, m.server.Close(ctx))
	}
	if m.closer != nil {
		errs = append(errs, m.closer.Close())
	}
	if m.Logger != nil {
		m.Logger.Info("saver stopped")
	}
	return errors.Join(errs...)
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// writeFileAtomic writes data so that a reader polling for the file never
// sees it half-written.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
