package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// statuses maps the domain error taxonomy to HTTP statuses, in one place.
var statuses = map[string]int{
	saver.EINVALID:      http.StatusBadRequest,
	saver.EUNAUTHORIZED: http.StatusUnauthorized,
	saver.ENOTFOUND:     http.StatusNotFound,
	saver.ECONFLICT:     http.StatusConflict,
	saver.EGONE:         http.StatusGone,
	saver.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	saver.EUNAVAILABLE:  http.StatusServiceUnavailable,
	saver.EINTERNAL:     http.StatusInternalServerError,
}

// Codes for errors raised by the HTTP layer itself rather than the domain.
const (
	codeNoRoute     = "no_route"
	codeUnsupported = "unsupported_media_type"
)

// retryAfterSeconds is what a 503 tells clients to wait before retrying. The
// store has already retried with backoff by then, so a short pause is enough.
const retryAfterSeconds = "1"

type errorBody struct {
	Error errorDetail `json:"error" msgpack:"error"`
}

type errorDetail struct {
	Code    string `json:"code" msgpack:"code"`
	Message string `json:"message" msgpack:"message"`
}

// handleError is echo's HTTPErrorHandler: every error a handler or middleware
// returns is written here, with a status and code from the taxonomy.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, detail := s.classify(err)
	if status >= 500 {
		s.Logger.Error("request failed",
			slog.String(saver.LogKeyRequestID, c.Response().Header().Get(echo.HeaderXRequestID)),
			slog.String("method", c.Request().Method),
			slog.String("path", c.Path()),
			slog.Any("error", err))
	}
	if status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(status)
	} else {
		// Not charged to the response budget: an error body is small, and
		// the request's share may be given back already (a panic unwinds
		// past budgetAnswer before Recover hands its error here), so a
		// charge now would never be returned.
		var mt string
		var b []byte
		if mt, b, werr = encodeAs(c, errorBody{Error: detail}); werr == nil {
			werr = c.Blob(status, mt, b)
		}
	}
	if werr != nil {
		s.Logger.Error("cannot write error response", slog.Any("error", werr))
	}
}

// rawErrorResponse is a whole HTTP/1.1 answer carrying detail, closing the
// connection, for the errors answered before any handler runs
// (listener.go); every other error goes through handleError. Each of
// headers is one more "Name: value" line.
func rawErrorResponse(status int, detail errorDetail, headers ...string) []byte {
	body, _ := json.Marshal(errorBody{Error: detail}) // strings always encode
	var extra string
	for _, h := range headers {
		extra += h + "\r\n"
	}
	return []byte("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" + extra +
		"Content-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" +
		string(body))
}

func (s *Server) classify(err error) (int, errorDetail) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg, _ := he.Message.(string)
		switch he.Code {
		case http.StatusNotFound:
			return he.Code, errorDetail{codeNoRoute, "No such route; see the API table in the README."}
		case http.StatusMethodNotAllowed:
			return he.Code, errorDetail{codeNoRoute, "Method not allowed on this route."}
		case http.StatusRequestEntityTooLarge:
			return he.Code, errorDetail{saver.ETOOLARGE, "Request body is over the limit of " + s.bodyLimit() + "."}
		case http.StatusUnsupportedMediaType:
			return he.Code, errorDetail{codeUnsupported, msg}
		case http.StatusServiceUnavailable:
			return he.Code, errorDetail{saver.EUNAVAILABLE, "Request timed out; retry later."}
		}
		if he.Code < 500 {
			if msg == "" {
				msg = http.StatusText(he.Code)
			}
			return he.Code, errorDetail{saver.EINVALID, msg}
		}
		return http.StatusInternalServerError, errorDetail{saver.EINTERNAL, "Internal error."}
	}
	code := saver.ErrorCode(err)
	status, ok := statuses[code]
	if !ok {
		code, status = saver.EINTERNAL, http.StatusInternalServerError
	}
	return status, errorDetail{code, saver.ErrorMessage(err)}
}
