package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// Backuper is a store that writes a consistent copy of itself, taken while
// it serves, to w (the embedded store: a tar stream, see embedded.Store.Backup).
// Nothing may reach w before the copy is taken, so that an error until then
// is answered with its status.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer) error
}

// backupRoute is the operator's route that streams a backup. It takes no
// path or other input: the service writes the copy to the caller, never to
// a place a request names.
const backupRoute = "/admin/backup"

// registerBackupRoute serves the backup under the operator's authority,
// outside /v1: a backup holds every tenant's data, so no tenant key opens
// it (see authenticateOperator).
func (s *Server) registerBackupRoute(e *echo.Echo) {
	e.POST(backupRoute, s.handleBackup, s.authenticateOperator)
}

// authenticateOperator lets through the operator routes' callers: with
// OperatorKey set, those sending it (as a tenant sends its key); with
// neither it nor Keys, every caller, as every route is open then (cmd/saver
// serves loopback only without keys). With tenant keys and no operator
// key, the routes are closed: a tenant key opens none of them.
func (s *Server) authenticateOperator(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.OperatorKey == nil || s.OperatorKey.Len() == 0 {
			if s.Keys != nil && s.Keys.Len() > 0 {
				return saver.Errorf(saver.EUNAUTHORIZED, "The operator routes are closed: this service has API keys but no operator key, and a tenant's key opens none of them.")
			}
			return next(c)
		}
		key := c.Request().Header.Get("X-API-Key")
		if h := c.Request().Header.Get(echo.HeaderAuthorization); key == "" && h != "" {
			if scheme, token, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
				key = strings.TrimSpace(token)
			}
		}
		if _, ok := s.OperatorKey.Tenant(key); !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="saver-operator"`)
			return saver.Errorf(saver.EUNAUTHORIZED, "The operator key is missing or wrong: send Authorization: Bearer <operator key>.")
		}
		return next(c)
	}
}

// handleBackup streams a backup of the store as a tar. It runs outside
// RequestTimeout, which bounds store work, not a copy of the whole store:
// the stream ends when the caller goes away, or when a write makes no
// progress for WriteTimeout (each write moves the deadline on), so a stalled
// caller does not hold the backup, which runs one at a time, for ever. An
// error once the stream has begun cannot change the status: the connection
// is cut, and the stream lacks the manifest that ends a whole backup.
func (s *Server) handleBackup(c echo.Context) error {
	resp := c.Response()
	resp.Header().Set(echo.HeaderContentType, "application/x-tar")
	resp.Header().Set("Cache-Control", "no-store")
	w := &progressWriter{w: resp, rc: http.NewResponseController(resp), timeout: s.WriteTimeout}
	start := time.Now()
	err := s.Backup.Backup(c.Request().Context(), w)
	switch {
	case err != nil && !resp.Committed:
		return err
	case err != nil:
		s.Logger.Error("backup failed while streaming; the copy the caller has is incomplete",
			slog.String(saver.LogKeyRequestID, resp.Header().Get(echo.HeaderXRequestID)),
			slog.Int64("bytes", w.n), slog.Any("error", err))
		panic(http.ErrAbortHandler)
	}
	s.Logger.Info("backup streamed", slog.Int64("bytes", w.n), slog.Duration("took", time.Since(start)))
	return nil
}

// progressWriter moves the connection's write deadline on at each write.
type progressWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
	n       int64
}

func (p *progressWriter) Write(b []byte) (int, error) {
	if p.timeout > 0 {
		if err := p.rc.SetWriteDeadline(time.Now().Add(p.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return 0, err
		}
	}
	n, err := p.w.Write(b)
	p.n += int64(n)
	return n, err
}
