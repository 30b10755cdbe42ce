package api

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// The /ui page: read-only views of a thread's checkpoint tree and of the
// Store's items (Memory). It is three files embedded in the binary; the
// page's script draws the tree from the /v1 tree and checkpoint routes and
// lists items through the Store's batch route, with the API key the user
// types. The files hold no data, so they are served without a key, like the
// probes. The page names the views the server offers (data-views on its
// body): each is there only with the routes its script calls.
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

var uiPage = template.Must(template.ParseFS(uiFiles, "ui/index.html"))

func (s *Server) registerUIRoutes(e *echo.Echo) {
	var views []string
	if s.Tree != nil {
		views = append(views, "tree")
	}
	if s.Items != nil {
		views = append(views, "memory")
	}
	var page bytes.Buffer
	if err := uiPage.Execute(&page, struct{ Views string }{strings.Join(views, " ")}); err != nil {
		panic("api: the /ui page: " + err.Error()) // unreachable: the template is embedded
	}
	e.GET("/ui", func(c echo.Context) error {
		return serveUI(c, page.Bytes(), "text/html; charset=utf-8")
	})
	e.GET("/ui/:file", handleUIAsset)
}

func handleUIAsset(c echo.Context) error {
	name := c.Param("file")
	ctype, ok := uiAssets[name]
	if !ok {
		return echo.ErrNotFound
	}
	b, err := uiFiles.ReadFile("ui/" + name)
	if err != nil {
		return echo.ErrNotFound // unreachable: every name is embedded
	}
	return serveUI(c, b, ctype)
}

func serveUI(c echo.Context, b []byte, ctype string) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", uiPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Revalidate each time, so a new binary's page is never mixed with an old one's script.
	h.Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, ctype, b)
}
