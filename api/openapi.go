package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPI is the hand-written OpenAPI 3 document of the whole API. A test
// checks it against the routes the server registers, both ways.
//
//go:embed openapi.yaml
var openAPI []byte

func (s *Server) handleOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openAPI)
}
