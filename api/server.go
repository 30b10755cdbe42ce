// Package api serves a saver.Store over HTTP with echo v4, in msgpack and JSON.
package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
	"github.com/saver-dev/saver/ttl"
)

// Defaults for the Server's knobs.
const (
	DefaultMaxBodyBytes   = 32 << 20
	DefaultPageSize       = 100
	DefaultRequestTimeout = 30 * time.Second
	DefaultTenant         = "default"

	DefaultReadHeaderTimeout = 10 * time.Second
	// A 32 MB body at half a megabyte a second.
	DefaultBodyTimeout = time.Minute
	// Covers the body, the store work and writing the answer.
	DefaultWriteTimeout = 2 * time.Minute
	// Longer than a load balancer's idle timeout (60 s on AWS), so that
	// the balancer, not the service, closes idle connections it reuses.
	DefaultIdleTimeout = 75 * time.Second
	DefaultMaxConns    = 1024
	// Sixteen bodies of the largest size at once.
	DefaultMaxBodiesBytes = 16 * DefaultMaxBodyBytes
	// Long enough for a burst of large puts to drain, short enough that
	// the client's retry comes soon.
	DefaultMaxBodiesWait = 5 * time.Second
	// A quarter of the bodies budget: four bodies of the largest size. One
	// client at its share leaves three quarters to the others.
	DefaultMaxClientBodiesBytes = DefaultMaxBodiesBytes / 4
	// An eighth of the connections: one address cannot hold more, so
	// seven eighths stay reachable for other addresses.
	DefaultMaxConnsPerClient = DefaultMaxConns / 8
	// A quarter of the connections busy with one client's requests at once.
	DefaultMaxClientRequests = DefaultMaxConns / 4
	// As much for answers as for bodies.
	DefaultMaxResponsesBytes = 16 * DefaultMaxBodyBytes
	// Sixteen such answers at once, each page held twice (read, then
	// encoded).
	DefaultHistoryPageBytes = 16 << 20
)

// Pinger is implemented by stores that can tell whether their backend answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Capabilities are what a store offers beyond saver.Store. The binary that
// opened the store says which it has; the server never looks for them in
// the store, so a store wrapped in another (metrics, tracing) keeps what it
// is wired with. A nil one, or HeadGuard false, leaves its routes and
// behaviour out, so the API never advertises what the store cannot do.
type Capabilities struct {
	// Tree serves the tree routes and the /ui page's tree view.
	Tree saver.TreeStore
	// Trees, when set, gives those routes the thread's tree already built
	// (a store that keeps them); without it they build it from Tree's nodes.
	Trees TreeSource
	// Ledger serves the idempotency routes.
	Ledger saver.Ledger
	// Items serves the Store (LangGraph's BaseStore) route and the /ui
	// page's Memory view.
	Items saver.ItemStore
	// Expirer serves pin and refreshes expiries on read.
	Expirer saver.Expirer
	// Pinger tells /readyz whether the store's backend answers; without
	// one, /readyz answers as /healthz does.
	Pinger Pinger
	// Backup serves the operator's backup route (backup.go).
	Backup Backuper
	// HeadGuard says that the Store honours PutCheckpoint.ExpectHead.
	// Without it a put with expected_head is refused (400), never stored
	// without its condition.
	HeadGuard bool
}

// TreeSource returns a thread's tree built, with no node for an unknown
// thread. The tree may be shared with other requests: it is read-only.
type TreeSource interface {
	Tree(ctx context.Context, tenant, threadID string) (*tree.Tree, error)
}

// Observer receives what the API observes, for metrics. Route is the pattern
// of a route the server serves, never the raw path, so no id becomes a label,
// or "unmatched"; method is one the server's routes answer, or "other".
type Observer interface {
	ObserveRequest(route, method string, status int, d time.Duration, in, out int64)
	ObserveClaim(outcome string)
	// ObserveItemOp counts one op of a Store batch by kind: get, put,
	// delete (a put of null), search or list_namespaces.
	ObserveItemOp(kind string)
}

// Server is the HTTP front of a saver.Store. Fill the exported fields, then
// Open; Close drains in-flight requests.
type Server struct {
	Store  saver.Store
	Logger *slog.Logger
	// Capabilities are what Store offers beyond saver.Store; none unless
	// set, whatever Store implements.
	Capabilities

	// MaxBodyBytes caps a request body; larger bodies get 413.
	MaxBodyBytes int64
	// MaxBodiesBytes caps the body bytes all requests hold at once (a
	// declared length taken before the body is read, a chunked body's
	// bytes as they arrive; given back when a request is answered); a
	// request that would pass it waits MaxBodiesWait for others to finish,
	// then gets 503 with Retry-After. Raised to MaxBodyBytes if lower
	// (cmd/saver refuses such a setting); 0: no cap.
	MaxBodiesBytes int64
	// MaxClientBodiesBytes is the share of MaxBodiesBytes one client (its
	// tenant; without Keys, its address) may hold, so that one client's
	// uploads delay only its own: past it, the client's request waits
	// MaxBodiesWait for its own bodies to be answered, then gets 503.
	// Raised to MaxBodyBytes if lower; 0, or MaxBodiesBytes or more: no
	// share.
	MaxClientBodiesBytes int64
	// MaxBodiesWait is how long a request waits for body bytes others hold.
	MaxBodiesWait time.Duration
	// MaxClientRequests caps the requests one client (as for
	// MaxClientBodiesBytes) has in flight; past it a request gets 503 at
	// once. 0: no cap.
	MaxClientRequests int
	// MaxResponsesBytes caps the bytes that the answers carrying stored
	// values (a tuple, a search page, a delta history) hold at once: the
	// store's reads for them, counted as they are read, and their
	// encoding; given back when the answer is written. A request that
	// would pass it waits MaxBodiesWait, then gets 503 with Retry-After;
	// one that alone needs more gets 413. 0: no cap.
	MaxResponsesBytes int64
	// HistoryPageBytes bounds the writes and seeds of one delta-history
	// answer; a longer history is answered in pages (see
	// handleDeltaHistory). 0: the whole history at once.
	HistoryPageBytes int64
	// PageSize caps the tuples of one search response.
	PageSize int
	// RequestTimeout bounds the store work of one request.
	RequestTimeout time.Duration
	// ReadHeaderTimeout bounds reading a request's headers; BodyTimeout its
	// body, from when its handler starts; WriteTimeout the whole request
	// from its headers to the end of the answer (net/http's WriteTimeout);
	// IdleTimeout how long a keep-alive connection waits for its next
	// request. Past any of them the connection is closed. 0 disables one.
	ReadHeaderTimeout, BodyTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns caps open connections; further ones wait to be accepted
	// until one closes. 0: no cap.
	MaxConns int
	// MaxConnsPerClient caps the connections open from one address: one
	// past it is closed as soon as it is accepted (on plain HTTP after a
	// 503), so one client cannot hold every connection. Behind a load
	// balancer or proxy every client has its address: set 0 (no cap), or
	// the balancer's connections are refused.
	MaxConnsPerClient int
	// TTL turns a thread's scope into expiry times.
	TTL ttl.Policy
	// Now is the clock for expiry times; tests replace it.
	Now func() time.Time
	// Observer, if set, is told of every request and claim.
	Observer Observer
	// Metrics, if set, is served at /metrics without authentication, like
	// the probes, so a scraper needs no tenant key. It carries no ids.
	Metrics http.Handler

	// TLSCert and TLSKey are PEM files; when both are set Open serves HTTPS.
	TLSCert, TLSKey string
	// Keys maps API keys to tenants. Nil or empty: no authentication, every
	// request is DefaultTenant's (cmd/saver allows that on loopback only).
	Keys *Keys
	// OperatorKey holds the key of the operator routes (the backup), which
	// no tenant key opens; see authenticateOperator.
	OperatorKey *Keys

	echo      *echo.Echo
	labels    routeLabels
	bodies    *bodyBudget   // nil without MaxBodiesBytes
	requests  *shares       // nil without MaxClientRequests
	responses *memoryBudget // nil without MaxResponsesBytes
	server    *http.Server
	ln        net.Listener
}

// routeLabels are the routes and methods the server serves: the only values
// the Observer is given, since a client can send any path and any method
// token, and each distinct value would be a new metrics series.
type routeLabels struct{ routes, methods map[string]bool }

func newRouteLabels(routes []*echo.Route) routeLabels {
	l := routeLabels{routes: map[string]bool{}, methods: map[string]bool{http.MethodHead: true, http.MethodOptions: true}}
	for _, r := range routes {
		if r.Method == echo.RouteNotFound {
			continue // a group's catch-all, not a route
		}
		l.routes[r.Path], l.methods[r.Method] = true, true
	}
	return l
}

func (l routeLabels) of(route, method string) (string, string) {
	if !l.routes[route] {
		route = "unmatched"
	}
	if !l.methods[method] {
		method = "other"
	}
	return route, method
}

// NewServer returns a server for store with default limits and no
// capabilities beyond saver.Store: set Capabilities to wire them.
func NewServer(store saver.Store, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{
		Store:          store,
		Logger:         logger.With(saver.LogKeyComponent, "api"),
		MaxBodyBytes:   DefaultMaxBodyBytes,
		MaxBodiesBytes: DefaultMaxBodiesBytes,
		MaxBodiesWait:  DefaultMaxBodiesWait,

		MaxResponsesBytes: DefaultMaxResponsesBytes,
		HistoryPageBytes:  DefaultHistoryPageBytes,
		PageSize:          DefaultPageSize,
		RequestTimeout:    DefaultRequestTimeout,
		TTL:               ttl.DefaultPolicy(),
		Now:               time.Now,

		MaxClientBodiesBytes: DefaultMaxClientBodiesBytes,
		MaxClientRequests:    DefaultMaxClientRequests,

		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		BodyTimeout:       DefaultBodyTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxConns:          DefaultMaxConns,
		MaxConnsPerClient: DefaultMaxConnsPerClient,
	}
	return s
}

// Handler builds the echo instance on first use and returns it; tests drive
// it with httptest without a listener.
func (s *Server) Handler() http.Handler {
	if s.echo == nil {
		if s.MaxBodiesBytes > 0 {
			share := s.MaxClientBodiesBytes
			if share > 0 {
				share = max(share, s.MaxBodyBytes)
			}
			s.bodies = newBodyBudget(max(s.MaxBodiesBytes, s.MaxBodyBytes), share, s.MaxBodiesWait)
		}
		if s.MaxClientRequests > 0 {
			s.requests = newShares(int64(s.MaxClientRequests))
		}
		if s.MaxResponsesBytes > 0 {
			s.responses = newMemoryBudget("response", s.MaxResponsesBytes, clientResponses(s.MaxResponsesBytes, s.HistoryPageBytes), s.MaxBodiesWait)
		}
		s.echo = s.newEcho()
		s.labels = newRouteLabels(s.echo.Routes()) // every route, wherever registered
	}
	return s.echo
}

// Route is a registered method and path, in echo's syntax (":thread_id").
type Route struct{ Method, Path string }

// Routes lists the routes the server serves, for the OpenAPI check.
func (s *Server) Routes() []Route {
	s.Handler()
	var out []Route
	for _, r := range s.echo.Routes() {
		out = append(out, Route{r.Method, r.Path})
	}
	return out
}

func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// Route on the escaped path so that a thread id holding "/" or "%" is one
	// path segment, and unescape parameters ourselves (see threadID).
	e.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u := c.Request().URL
			u.RawPath = u.EscapedPath()
			return next(c)
		}
	})
	e.Pre(headAsGet)
	e.Pre(boundRequestID)
	e.Use(middleware.RequestID())
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:      true,
		LogRequestID:     true,
		LogRoutePath:     true,
		LogMethod:        true,
		LogStatus:        true,
		LogLatency:       true,
		LogError:         true,
		LogContentLength: true,
		LogResponseSize:  true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			if c.Get(ctxKeyHead) != nil {
				v.Method = http.MethodHead
			}
			route, method := s.labels.of(v.RoutePath, v.Method)
			if s.Observer != nil {
				in, _ := strconv.ParseInt(v.ContentLength, 10, 64)
				s.Observer.ObserveRequest(route, method, v.Status, v.Latency, in, v.ResponseSize)
			}
			level := slog.LevelDebug
			if v.Status >= 500 {
				level = slog.LevelWarn
			}
			s.Logger.LogAttrs(c.Request().Context(), level, "request",
				slog.String(saver.LogKeyRequestID, v.RequestID),
				slog.String("method", method),
				slog.String("route", route),
				slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency))
			return nil
		},
	}))
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.Logger.Error("panic", slog.String(saver.LogKeyRequestID,
				c.Response().Header().Get(echo.HeaderXRequestID)), slog.Any("error", err),
				slog.String("stack", string(stack)))
			return err
		},
	}))
	e.Use(s.limitBody)
	e.Use(s.strictQuery)
	e.Use(middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{
		Timeout: s.RequestTimeout,
		// A backup bounds itself (handleBackup): a copy of the whole store
		// takes as long as the store is large.
		Skipper: func(c echo.Context) bool { return c.Path() == backupRoute },
	}))

	// Probes stay open so that load balancers need no key.
	e.GET("/healthz", s.handleHealth)
	e.GET("/readyz", s.handleReady)
	e.GET("/openapi.yaml", s.handleOpenAPI)
	if s.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(s.Metrics))
	}
	// The read-only page (api/ui.go): static files, no data, no key.
	// Present only with the tree or Store routes its script calls.
	if s.Tree != nil || s.Items != nil {
		s.registerUIRoutes(e)
	}
	if s.Backup != nil {
		s.registerBackupRoute(e)
	}
	// What a client may hold is counted once it is named, by its tenant.
	v1 := e.Group("/v1", s.authenticate, s.limitRequests, s.budgetBody)
	s.registerCheckpointRoutes(v1)
	s.registerThreadRoutes(v1)
	if s.Tree != nil {
		s.registerTreeRoutes(v1)
	}
	if s.Ledger != nil {
		s.registerLedgerRoutes(v1)
	}
	if s.Items != nil {
		s.registerItemRoutes(v1)
	}
	if s.Expirer != nil {
		v1.POST("/threads/:thread_id/checkpoints/pin", s.handleCheckpointPin)
	}
	return e
}

// limitBody caps the bytes read from a body; the decoder reports the overrun
// as ETOOLARGE. A declared Content-Length over the cap is refused up front.
// A body must also arrive within BodyTimeout: a connection read deadline,
// which bind lifts once the body is in (a slow upload otherwise held its
// connection for as long as the client liked). Both hold on every route;
// the bodies budget is taken later, once the client is known (budgetBody).
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength > s.MaxBodyBytes {
			return saver.Errorf(saver.ETOOLARGE, "Request body is %d bytes; the limit is %d.", req.ContentLength, s.MaxBodyBytes)
		}
		if req.ContentLength != 0 && s.BodyTimeout > 0 {
			switch err := http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(s.BodyTimeout)); {
			case err == nil:
				c.Set(ctxKeyBodyTimeout, s.BodyTimeout)
			case !errors.Is(err, http.ErrNotSupported): // httptest's recorder has no connection
				return fmt.Errorf("api: body deadline: %w", err)
			}
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, s.MaxBodyBytes)
		return next(c)
	}
}

// clientResponses is one client's share of a response budget of limit
// bytes: a quarter, as for bodies, yet room for a history page held twice
// (read, then encoded), or no share at all when the budget is that small.
func clientResponses(limit, page int64) int64 {
	return max(limit/4, 2*page)
}

// ctxKeyBodyTimeout holds the BodyTimeout a request's body is read under.
const ctxKeyBodyTimeout = "saver.body_timeout"

// ctxKeyHoldDecoded holds the func(bytes int) error that bind calls to take
// what a body takes once decoded from the bytes all bodies hold, given back
// when the handler returns.
const ctxKeyHoldDecoded = "saver.hold_decoded"

func (s *Server) bodyLimit() string { return fmt.Sprintf("%d bytes", s.MaxBodyBytes) }

// Open listens on addr and serves in the background. Listen errors come back
// here; an addr with port 0 picks a free port (see Addr).
func (s *Server) Open(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("api: listen %s: %w", addr, err)
	}
	s.ln = ln
	s.server = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
	}
	if s.IdleTimeout == 0 {
		s.server.IdleTimeout = -1 // 0 would fall back to ReadTimeout
	}
	useTLS := s.TLSCert != "" || s.TLSKey != ""
	ln = s.listen(ln, useTLS)
	if useTLS {
		cert, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("api: tls: %w", err)
		}
		s.server.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, s.server.TLSConfig)
	}
	go func() {
		if err := s.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger.Error("serve", slog.Any("error", err))
		}
	}()
	return nil
}

// Addr returns the address the server listens on, once open.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops accepting connections and waits for in-flight requests until
// ctx ends.
func (s *Server) Close(ctx context.Context) error {
	if s.server == nil {
		return nil
	}
	if err := s.server.Shutdown(ctx); err != nil {
		return fmt.Errorf("api: shutdown: %w", err)
	}
	return nil
}
