package api

import "github.com/labstack/echo/v4"

// maxRequestIDBytes bounds a client's X-Request-ID. The service echoes it in
// the answer and writes it in every log line of the request, so an unbounded
// one would let a client fill the logs with each call.
const maxRequestIDBytes = 128

// boundRequestID drops an X-Request-ID that is too long or holds other than
// letters, digits and "-_.:", before echo's RequestID middleware, which then
// gives the request a fresh id.
func boundRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header
		if id := h.Get(echo.HeaderXRequestID); id != "" && !validRequestID(id) {
			h.Del(echo.HeaderXRequestID)
		}
		return next(c)
	}
}

func validRequestID(id string) bool {
	if len(id) > maxRequestIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}
