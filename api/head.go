package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// ctxKeyHead marks a HEAD request that headAsGet routes as a GET.
const ctxKeyHead = "saver.head"

// headAsGet serves HEAD on every GET route: echo routes by method and has no
// HEAD routes, so HEAD answered 404 or 405. The request is routed and handled
// as a GET whose body is discarded; logs and metrics still say HEAD.
func headAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodHead {
			return next(c)
		}
		// echo routes on the request it was handed, so the method changes in
		// place; it is HEAD again before net/http writes the headers, so that
		// net/http still answers as to a HEAD.
		req.Method = http.MethodGet
		defer func() { req.Method = http.MethodHead }()
		c.Set(ctxKeyHead, true)
		res := c.Response()
		res.Writer = headWriter{res.Writer}
		return next(c)
	}
}

// headWriter drops a response's body and keeps its status and headers.
type headWriter struct{ http.ResponseWriter }

func (w headWriter) Write(p []byte) (int, error) { return len(p), nil }

// Unwrap lets http.ResponseController reach the connection underneath.
func (w headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
