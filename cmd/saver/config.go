package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/ttl"
)

// Store kinds selectable with SAVER_STORE or -store.
const (
	StoreEmbedded = "embedded"
	// storeBolt is the embedded store's name before it was named for what
	// it is; still accepted, read as StoreEmbedded.
	storeBolt     = "bolt"
	StoreDynamoDB = "dynamodb"
)

// Config is the service's whole configuration. Library packages never read the
// environment; everything reaches them from here.
type Config struct {
	Addr            string        // listen address
	AddrFile        string        // if set, the bound host:port is written here once listening
	Store           string        // StoreEmbedded or StoreDynamoDB
	DBPath          string        // the embedded store: a Pebble directory, or an older bbolt file
	DiskReserve     uint64        // free disk space the embedded store keeps
	TreeCacheNodes  int           // nodes of threads read lately the embedded store keeps decoded
	MaxBodyBytes    int64         // request body cap
	MaxBodiesBytes  int64         // body bytes all requests hold at once
	PageSize        int           // tuples per search page
	RequestTimeout  time.Duration // store work per request
	ShutdownTimeout time.Duration // how long SIGTERM waits for in-flight requests

	// What one client (its tenant; without keys, its address) may hold;
	// Auto: a fraction of the limit above it (see ClientBodies and the
	// others), so that lowering that limit lowers them too.
	MaxClientBodiesBytes int64 // of MaxBodiesBytes
	MaxClientRequests    int   // requests in flight
	MaxConnsPerClient    int   // open connections of one address

	// Connection limits (api.Server's fields of the same names).
	ReadHeaderTimeout, BodyTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxConns                                                  int
	LogLevel                                                  string        // debug, info, warn, error
	LogFormat                                                 string        // text or json
	TTL                                                       ttl.Policy    // retention by scope
	APIKeys                                                   string        // "tenant:key,tenant:key"; never logged
	APIKeysFile                                               string        // file of "tenant:key" lines
	OperatorKeyFile                                           string        // file holding the key of the operator routes (backup)
	TLSCert                                                   string        // PEM certificate; with TLSKey, serve HTTPS
	TLSKey                                                    string        // PEM private key
	Table                                                     string        // DynamoDB table
	Bucket                                                    string        // S3 bucket for offloaded payloads; "" disables offload
	OffloadBytes                                              int           // items larger than this keep their payload in S3
	PatchCache                                                int           // bytes of recent channel values kept to store the next as patches
	ChainCache                                                int           // bytes of delta chains kept so that the next history reads only what is newer
	Init                                                      bool          // create the table and bucket at start if missing
	SweepEvery                                                time.Duration // background orphan sweep period; 0 disables
	SweepGrace                                                time.Duration // age an orphan must reach before a sweep removes it
	TombstoneLifetime                                         time.Duration // how long a deletion refuses late writes to what it deleted
	Metrics                                                   bool          // serve Prometheus metrics at /metrics

	// Bytes all answers carrying stored values hold at once, and the
	// writes and seeds of one delta-history page.
	MaxResponsesBytes, HistoryPageBytes int64
}

// DefaultConfig is what `saver serve` runs with when nothing is set: the
// embedded store in ./data on loopback.
func DefaultConfig() Config {
	return Config{
		Addr:            "127.0.0.1:7878",
		Store:           StoreEmbedded,
		DBPath:          "data/saver.db",
		DiskReserve:     embedded.DefaultReserveBytes,
		TreeCacheNodes:  embedded.DefaultTreeCacheNodes,
		MaxBodyBytes:    api.DefaultMaxBodyBytes,
		MaxBodiesBytes:  api.DefaultMaxBodiesBytes,
		PageSize:        100,
		RequestTimeout:  30 * time.Second,
		ShutdownTimeout: 15 * time.Second,

		ReadHeaderTimeout: api.DefaultReadHeaderTimeout,
		BodyTimeout:       api.DefaultBodyTimeout,
		WriteTimeout:      api.DefaultWriteTimeout,
		IdleTimeout:       api.DefaultIdleTimeout,
		MaxConns:          api.DefaultMaxConns,

		MaxClientBodiesBytes: Auto,
		MaxClientRequests:    Auto,
		MaxConnsPerClient:    Auto,

		LogLevel:     "info",
		LogFormat:    "text",
		TTL:          ttl.DefaultPolicy(),
		Table:        "saver",
		OffloadBytes: 350 << 10,
		PatchCache:   dynamo.DefaultRecentBytes,
		ChainCache:   dynamo.DefaultChainCacheBytes,
		SweepGrace:   time.Hour,
		Metrics:      true,

		TombstoneLifetime: saver.DefaultTombstoneLifetime,

		MaxResponsesBytes: api.DefaultMaxResponsesBytes,
		HistoryPageBytes:  api.DefaultHistoryPageBytes,
	}
}

// Auto is the value of a per-client limit that follows the limit of all
// clients: an operator who lowers max-conns to 64 gets 8 connections per
// address without setting that too, never a per-client limit above the
// whole.
const Auto = -1

// ClientBodies is what MaxClientBodiesBytes comes to: Auto is a quarter of
// max-bodies, at least one body, so that one client at its share leaves
// three quarters to the others.
func (c *Config) ClientBodies() int64 {
	if c.MaxClientBodiesBytes == Auto {
		return max(c.MaxBodiesBytes/4, c.MaxBodyBytes)
	}
	return c.MaxClientBodiesBytes
}

// ClientRequests is what MaxClientRequests comes to: Auto is a quarter of
// max-conns, at least one.
func (c *Config) ClientRequests() int {
	if c.MaxClientRequests == Auto {
		return max(c.MaxConns/4, 1)
	}
	return c.MaxClientRequests
}

// ConnsPerClient is what MaxConnsPerClient comes to: Auto is an eighth of
// max-conns, at least one.
func (c *Config) ConnsPerClient() int {
	if c.MaxConnsPerClient == Auto {
		return max(c.MaxConns/8, 1)
	}
	return c.MaxConnsPerClient
}

// envVar describes one setting: its variable, flag and help. The table is the
// single source for flags, environment and the README's configuration table.
type envVar struct {
	env, flag, help string
	set             func(c *Config, v string) error
	get             func(c *Config) string
}

func settings() []envVar {
	str := func(p func(*Config) *string) (func(*Config, string) error, func(*Config) string) {
		return func(c *Config, v string) error { *p(c) = v; return nil }, func(c *Config) string { return *p(c) }
	}
	dur := func(p func(*Config) *time.Duration) (func(*Config, string) error, func(*Config) string) {
		return func(c *Config, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil {
					return fmt.Errorf("not a duration (e.g. 30s): %q", v)
				}
				*p(c) = d
				return nil
			}, func(c *Config) string {
				return p(c).String()
			}
	}
	// count reads a whole number of at least 0 (what says of what, for the
	// error).
	count := func(p func(*Config) *int, what string) (func(*Config, string) error, func(*Config) string) {
		return func(c *Config, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return fmt.Errorf("not a %s: %q", what, v)
				}
				*p(c) = n
				return nil
			}, func(c *Config) string {
				return strconv.Itoa(*p(c))
			}
	}
	var out []envVar
	add := func(env, flag, help string, set func(*Config, string) error, get func(*Config) string) {
		out = append(out, envVar{env, flag, help, set, get})
	}
	s, g := str(func(c *Config) *string { return &c.Addr })
	add("SAVER_ADDR", "addr", "listen address (host:port; port 0 picks a free one)", s, g)
	s, g = str(func(c *Config) *string { return &c.AddrFile })
	add("SAVER_ADDR_FILE", "addr-file", "write the bound host:port to this file once listening", s, g)
	add("SAVER_STORE", "store", "store: embedded (a directory on this machine; bolt, its former name, is read as embedded) or dynamodb",
		func(c *Config, v string) error {
			c.Store = v
			if v == storeBolt {
				c.Store = StoreEmbedded
			}
			return nil
		}, func(c *Config) string { return c.Store })
	s, g = str(func(c *Config) *string { return &c.DBPath })
	add("SAVER_DB", "db", "path of the embedded store: a directory (Pebble) for a new store; a bbolt file made by an earlier release keeps opening (saver migrate moves it)", s, g)
	add("SAVER_DISK_RESERVE", "disk-reserve", "free disk space in bytes a Pebble store keeps: writes are answered 503 (disk full) rather than take it",
		func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				return fmt.Errorf("not a positive byte count: %q", v)
			}
			c.DiskReserve = n
			return nil
		}, func(c *Config) string { return strconv.FormatUint(c.DiskReserve, 10) })
	s, g = count(func(c *Config) *int { return &c.TreeCacheNodes }, "count")
	add("SAVER_TREE_CACHE", "tree-cache", "checkpoints of the threads read last whose tree the embedded store keeps in memory, over all threads, for the tree routes (about 420 bytes each with its tree); 0 keeps none", s, g)
	add("SAVER_MAX_BODY", "max-body", "largest request body in bytes",
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("not a byte count: %q", v)
			}
			c.MaxBodyBytes = n
			return nil
		}, func(c *Config) string { return strconv.FormatInt(c.MaxBodyBytes, 10) })
	add("SAVER_MAX_BODIES", "max-bodies", "most request body bytes held at once, all requests together, at least max-body (a declared length is taken before the body is read); a request past it waits up to 5s, then gets 503",
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("not a byte count: %q", v)
			}
			c.MaxBodiesBytes = n
			return nil
		}, func(c *Config) string { return strconv.FormatInt(c.MaxBodiesBytes, 10) })
	add("SAVER_MAX_CLIENT_BODIES", "max-client-bodies", "most request body bytes one client (its tenant; without keys, its address) holds at once, between max-body and max-bodies; past it only that client's requests wait, then get 503; 0: no share",
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("not a byte count: %q", v)
			}
			c.MaxClientBodiesBytes = n
			return nil
		}, autoGet(func(c *Config) int64 { return c.MaxClientBodiesBytes }, "max-bodies/4"))
	add("SAVER_MAX_CLIENT_REQUESTS", "max-client-requests", "most requests one client (its tenant; without keys, its address) has in flight; past it a request gets 503 at once; 0: no cap",
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("not a count: %q", v)
			}
			c.MaxClientRequests = n
			return nil
		}, autoGet(func(c *Config) int64 { return int64(c.MaxClientRequests) }, "max-conns/4"))
	add("SAVER_MAX_RESPONSES", "max-responses", "most bytes held at once by the answers that carry stored values (get_tuple, list, delta history, the Store's batches), all requests together, counted as the store reads them, at least max-body; a request past it waits up to 5s, then gets 503; one that alone needs more gets 413",
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("not a byte count: %q", v)
			}
			c.MaxResponsesBytes = n
			return nil
		}, func(c *Config) string { return strconv.FormatInt(c.MaxResponsesBytes, 10) })
	add("SAVER_HISTORY_PAGE", "history-page", "bytes of writes and seeds in one delta-history answer, at most half of max-responses (a page is held twice, read then encoded); a longer history is answered in pages, which the clients follow",
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("not a byte count: %q", v)
			}
			c.HistoryPageBytes = n
			return nil
		}, func(c *Config) string { return strconv.FormatInt(c.HistoryPageBytes, 10) })
	add("SAVER_PAGE_SIZE", "page-size", "most checkpoints in one list response",
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("not a number: %q", v)
			}
			c.PageSize = n
			return nil
		}, func(c *Config) string { return strconv.Itoa(c.PageSize) })
	s, g = dur(func(c *Config) *time.Duration { return &c.RequestTimeout })
	add("SAVER_REQUEST_TIMEOUT", "request-timeout", "longest store work for one request", s, g)
	s, g = dur(func(c *Config) *time.Duration { return &c.ShutdownTimeout })
	add("SAVER_SHUTDOWN_TIMEOUT", "shutdown-timeout", "how long SIGTERM waits for in-flight requests", s, g)
	s, g = dur(func(c *Config) *time.Duration { return &c.ReadHeaderTimeout })
	add("SAVER_READ_HEADER_TIMEOUT", "read-header-timeout", "longest time to receive a request's headers; then the connection is closed", s, g)
	s, g = dur(func(c *Config) *time.Duration { return &c.BodyTimeout })
	add("SAVER_BODY_TIMEOUT", "body-timeout", "longest time to receive a request's body; then 408 and the connection is closed", s, g)
	s, g = dur(func(c *Config) *time.Duration { return &c.WriteTimeout })
	add("SAVER_WRITE_TIMEOUT", "write-timeout", "longest time from a request's headers to the end of its answer (body, store work, response); more than body-timeout plus request-timeout", s, g)
	s, g = dur(func(c *Config) *time.Duration { return &c.IdleTimeout })
	add("SAVER_IDLE_TIMEOUT", "idle-timeout", "how long a keep-alive connection waits for its next request; keep it above a load balancer's idle timeout", s, g)
	add("SAVER_MAX_CONNS", "max-conns", "most open connections; further ones wait to be accepted until one closes",
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("not a number: %q", v)
			}
			c.MaxConns = n
			return nil
		}, func(c *Config) string { return strconv.Itoa(c.MaxConns) })
	add("SAVER_MAX_CONNS_PER_CLIENT", "max-conns-per-client", "most open connections from one address, at most max-conns; one past it is closed at once (503); 0: no cap, as behind a load balancer, where every client has the balancer's address",
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("not a count: %q", v)
			}
			c.MaxConnsPerClient = n
			return nil
		}, autoGet(func(c *Config) int64 { return int64(c.MaxConnsPerClient) }, "max-conns/8"))
	add("SAVER_DEFAULT_SCOPE", "default-scope", "retention scope of threads whose client names none: session or persistent",
		func(c *Config, v string) error { c.TTL.Default = saver.Scope(v); return nil },
		func(c *Config) string { return string(c.TTL.Default) })
	s, g = dur(func(c *Config) *time.Duration { return &c.TTL.Session })
	add("SAVER_SESSION_TTL", "session-ttl", "how long a session thread's data lives after it is written", s, g)
	s, g = dur(func(c *Config) *time.Duration { return &c.TTL.Persistent })
	add("SAVER_PERSISTENT_TTL", "persistent-ttl", "how long a persistent thread's data lives; 0s keeps it forever", s, g)
	add("SAVER_TTL_REFRESH_ON_READ", "ttl-refresh-on-read", "extend a checkpoint's expiry when it is read in the second half of its life",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("not a boolean: %q", v)
			}
			c.TTL.RefreshOnRead = b
			return nil
		}, func(c *Config) string { return strconv.FormatBool(c.TTL.RefreshOnRead) })
	add("SAVER_API_KEYS", "api-keys", "API keys as tenant:key pairs, comma-separated (prefer the file)",
		func(c *Config, v string) error { c.APIKeys = v; return nil },
		func(c *Config) string { return "" }) // never echo a key, not even in -help
	s, g = str(func(c *Config) *string { return &c.APIKeysFile })
	add("SAVER_API_KEYS_FILE", "api-keys-file", "file of tenant:key lines (# comments); without keys the service serves loopback only", s, g)
	s, g = str(func(c *Config) *string { return &c.OperatorKeyFile })
	add("SAVER_OPERATOR_KEY_FILE", "operator-key-file", "file holding the operator key (16+ characters, one line), which opens POST /admin/backup and no tenant's data; with API keys and no operator key, backups go through saver backup -db with the service stopped", s, g)
	s, g = str(func(c *Config) *string { return &c.TLSCert })
	add("SAVER_TLS_CERT", "tls-cert", "PEM certificate file; with -tls-key the service speaks HTTPS", s, g)
	s, g = str(func(c *Config) *string { return &c.TLSKey })
	add("SAVER_TLS_KEY", "tls-key", "PEM private key file", s, g)
	s, g = str(func(c *Config) *string { return &c.Table })
	add("SAVER_TABLE", "table", "DynamoDB table (store dynamodb)", s, g)
	s, g = str(func(c *Config) *string { return &c.Bucket })
	add("SAVER_BUCKET", "bucket", "S3 bucket for payloads over the offload size (store dynamodb)", s, g)
	add("SAVER_OFFLOAD_BYTES", "offload-bytes", "item size in bytes above which a payload goes to S3",
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("not a byte count: %q", v)
			}
			c.OffloadBytes = n
			return nil
		}, func(c *Config) string { return strconv.Itoa(c.OffloadBytes) })
	s, g = count(func(c *Config) *int { return &c.PatchCache }, "byte count")
	add("SAVER_PATCH_CACHE_BYTES", "patch-cache-bytes", "memory in bytes for recent channel values, kept to store a value that grew as a patch on the last and to answer reads of them (store dynamodb); 0 stores every value whole and reads every value from the table", s, g)
	s, g = count(func(c *Config) *int { return &c.ChainCache }, "byte count")
	add("SAVER_CHAIN_CACHE_BYTES", "chain-cache-bytes", "memory in bytes for the delta chains histories read, so that the next DeltaChannel turn reads only what is newer (store dynamodb); 0 reads every history whole from the table", s, g)
	add("SAVER_INIT", "init", "create the DynamoDB table and S3 bucket at start if missing",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("not a boolean: %q", v)
			}
			c.Init = b
			return nil
		}, func(c *Config) string { return strconv.FormatBool(c.Init) })
	s, g = dur(func(c *Config) *time.Duration { return &c.SweepEvery })
	add("SAVER_SWEEP_EVERY", "sweep-every", "sweep in the background this often (S3 orphans on dynamodb, expired items on the embedded store); 0s: never (use saver gc)", s, g)
	s, g = dur(func(c *Config) *time.Duration { return &c.SweepGrace })
	add("SAVER_SWEEP_GRACE", "sweep-grace", "age an unreferenced S3 object must reach before the sweeper removes it", s, g)
	add("SAVER_TOMBSTONE_TTL", "tombstone-ttl", "how long a deletion (delete_thread, delete_for_runs, prune delete) refuses, with 410 gone, a late put whose parent or id, or put_writes whose checkpoint, it deleted; then such a write is stored as new. Longer than a run may go on after its thread is deleted",
		func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second {
				return fmt.Errorf("not a duration of a second or more (e.g. 168h): %q", v)
			}
			c.TombstoneLifetime = d
			return nil
		}, func(c *Config) string { return c.TombstoneLifetime.String() })
	add("SAVER_METRICS", "metrics", "serve Prometheus metrics at /metrics (no key needed; no ids in labels)",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("not a boolean: %q", v)
			}
			c.Metrics = b
			return nil
		}, func(c *Config) string { return strconv.FormatBool(c.Metrics) })
	s, g = str(func(c *Config) *string { return &c.LogLevel })
	add("LOG_LEVEL", "log-level", "debug, info, warn or error", s, g)
	s, g = str(func(c *Config) *string { return &c.LogFormat })
	add("LOG_FORMAT", "log-format", "text or json", s, g)
	return out
}

// autoGet shows a per-client limit: its number, or auto, what Auto means.
func autoGet(v func(*Config) int64, auto string) func(*Config) string {
	return func(c *Config) string {
		if n := v(c); n != Auto {
			return strconv.FormatInt(n, 10)
		}
		return auto
	}
}

// ConfigFromEnv returns the defaults overridden by the environment.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	for _, s := range settings() {
		if v := getenv(s.env); v != "" {
			if err := s.set(&c, v); err != nil {
				return c, fmt.Errorf("%s: %w", s.env, err)
			}
		}
	}
	return c, nil
}

// RegisterFlags adds one flag per setting to fs; flags override the
// environment because their defaults are the values already in c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	for _, s := range settings() {
		fs.Func(s.flag, fmt.Sprintf("%s (env %s, default %q)", s.help, s.env, s.get(c)), func(v string) error {
			return s.set(c, v)
		})
	}
}

// Validate reports every problem in c at once.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	}
	switch c.Store {
	case StoreEmbedded:
		if c.DBPath == "" {
			errs = append(errs, errors.New("db: a path is required for the embedded store"))
		}
	case StoreDynamoDB:
		if c.Table == "" {
			errs = append(errs, errors.New("table: a name is required for the dynamodb store"))
		}
		// DynamoDB's item limit is 400 KB; the rest of the item needs room.
		if c.OffloadBytes < 1024 || c.OffloadBytes > 380<<10 {
			errs = append(errs, fmt.Errorf("offload-bytes %d: must be between 1024 and %d", c.OffloadBytes, 380<<10))
		}
		if c.SweepGrace < time.Minute {
			errs = append(errs, errors.New("sweep-grace must be at least 1m"))
		}
	default:
		errs = append(errs, fmt.Errorf("store %q: use %s or %s", c.Store, StoreEmbedded, StoreDynamoDB))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("max-body %d: must be at least 1024", c.MaxBodyBytes))
	}
	if c.MaxBodiesBytes < c.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("max-bodies %d: must be at least max-body (%d)", c.MaxBodiesBytes, c.MaxBodyBytes))
	}
	// A client's share is at least one body, or it could never send one;
	// a share of all of it is no share, which 0 says plainly.
	if n := c.ClientBodies(); n != 0 && (n < c.MaxBodyBytes || n > c.MaxBodiesBytes) {
		errs = append(errs, fmt.Errorf("max-client-bodies %d: must be between max-body (%d) and max-bodies (%d), or 0 for no share", n, c.MaxBodyBytes, c.MaxBodiesBytes))
	}
	if c.MaxResponsesBytes < c.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("max-responses %d: must be at least max-body (%d)", c.MaxResponsesBytes, c.MaxBodyBytes))
	}
	// A page is held twice (read, then encoded): one larger than half the
	// budget could never be answered.
	if c.HistoryPageBytes < 1 || 2*c.HistoryPageBytes > c.MaxResponsesBytes {
		errs = append(errs, fmt.Errorf("history-page %d: must be between 1 and half of max-responses (%d)", c.HistoryPageBytes, c.MaxResponsesBytes))
	}
	if c.PageSize < 1 || c.PageSize > 1000 {
		errs = append(errs, fmt.Errorf("page-size %d: must be between 1 and 1000", c.PageSize))
	}
	if c.RequestTimeout <= 0 || c.ShutdownTimeout <= 0 || c.ReadHeaderTimeout <= 0 || c.BodyTimeout <= 0 || c.IdleTimeout <= 0 {
		errs = append(errs, errors.New("timeouts must be positive"))
	}
	// The write deadline runs from a request's headers: it must leave room
	// for the whole body and the store work, or slow requests lose answers.
	if c.WriteTimeout <= c.BodyTimeout+c.RequestTimeout {
		errs = append(errs, fmt.Errorf("write-timeout %s: must be more than body-timeout plus request-timeout (%s)", c.WriteTimeout, c.BodyTimeout+c.RequestTimeout))
	}
	if c.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("max-conns %d: must be at least 1", c.MaxConns))
	}
	if n := c.ConnsPerClient(); n > c.MaxConns {
		errs = append(errs, fmt.Errorf("max-conns-per-client %d: must be at most max-conns (%d), or 0 for no cap", n, c.MaxConns))
	}
	if c.SweepEvery < 0 {
		errs = append(errs, errors.New("sweep-every must not be negative"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key go together"))
	}
	if err := c.TTL.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log-format %q: use text or json", c.LogFormat))
	}
	return errors.Join(errs...)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return l, fmt.Errorf("log-level %q: use debug, info, warn or error", s)
	}
	return l, nil
}

// LoadOperatorKey returns the key in OperatorKeyFile, "" without one: the
// file's one line that is not blank or a # comment. Errors never hold the
// key.
func (c *Config) LoadOperatorKey(readFile func(string) ([]byte, error)) (string, error) {
	if c.OperatorKeyFile == "" {
		return "", nil
	}
	b, err := readFile(c.OperatorKeyFile)
	if err != nil {
		return "", fmt.Errorf("operator-key-file: %w", err)
	}
	var key string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if key != "" {
			return "", fmt.Errorf("operator-key-file %s: more than one key; it holds one line, the key", c.OperatorKeyFile)
		}
		key = line
	}
	if key == "" {
		return "", fmt.Errorf("operator-key-file %s: no key in it", c.OperatorKeyFile)
	}
	return key, nil
}

// LoadKeys returns the API keys of APIKeys and APIKeysFile as key -> tenant.
// Errors name the line, never the key.
func (c *Config) LoadKeys(readFile func(string) ([]byte, error)) (map[string]string, error) {
	keys := map[string]string{}
	add := func(where, pair string) error {
		pair = strings.TrimSpace(pair)
		if pair == "" || strings.HasPrefix(pair, "#") {
			return nil
		}
		tenant, key, ok := strings.Cut(pair, ":")
		tenant, key = strings.TrimSpace(tenant), strings.TrimSpace(key)
		if !ok || tenant == "" || key == "" {
			return fmt.Errorf("%s: want tenant:key", where)
		}
		if other, dup := keys[key]; dup && other != tenant {
			return fmt.Errorf("%s: the same key is given to tenants %q and %q", where, other, tenant)
		}
		keys[key] = tenant
		return nil
	}
	for i, pair := range strings.Split(c.APIKeys, ",") {
		if err := add(fmt.Sprintf("SAVER_API_KEYS entry %d", i+1), pair); err != nil {
			return nil, err
		}
	}
	if c.APIKeysFile != "" {
		b, err := readFile(c.APIKeysFile)
		if err != nil {
			return nil, fmt.Errorf("api-keys-file: %w", err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if err := add(fmt.Sprintf("%s line %d", c.APIKeysFile, i+1), line); err != nil {
				return nil, err
			}
		}
	}
	return keys, nil
}
