package api

import (
	"embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// The /ui page: a read-only view of a thread's checkpoint tree. It is three
// static files embedded in the binary; the page's script draws the tree from
// the /v1 tree and checkpoint routes, with the API key the user types. The
// files hold no data, so they are served without a key, like the probes.
//
//go:embed ui/index.html ui/app.js ui/style.css
var uiFiles embed.FS

// uiAssets are the files served under /ui/, with their types. The page itself
// is only at /ui, so that its relative links ("ui/app.js", "v1/...") resolve
// the same behind a proxy that mounts the service under a prefix.
var uiAssets = map[string]string{
	"app.js":    "text/javascript; charset=utf-8",
	"style.css": "text/css; charset=utf-8",
}

// uiPolicy lets the page load only its own files and call only this service:
// no inline script, no other origin, no framing.
const uiPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (s *Server) registerUIRoutes(e *echo.Echo) {
	e.GET("/ui", handleUIPage)
	e.GET("/ui/:file", handleUIAsset)
}

func handleUIPage(c echo.Context) error {
	return serveUI(c, "index.html", "text/html; charset=utf-8")
}

func handleUIAsset(c echo.Context) error {
	name := c.Param("file")
	ctype, ok := uiAssets[name]
	if !ok {
		return echo.ErrNotFound
	}
	return serveUI(c, name, ctype)
}

func serveUI(c echo.Context, name, ctype string) error {
	b, err := uiFiles.ReadFile("ui/" + name)
	if err != nil {
		return echo.ErrNotFound // unreachable: every name is embedded
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", uiPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Revalidate each time, so a new binary's page is never mixed with an old one's script.
	h.Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, ctype, b)
}
