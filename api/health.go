package api

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

type statusResponse struct {
	Status string `json:"status" msgpack:"status"`
}

// handleHealth answers as long as the process serves requests.
func (s *Server) handleHealth(c echo.Context) error {
	return respond(c, http.StatusOK, statusResponse{Status: "ok"})
}

// handleReady answers 200 only when the store's backend answers too. A
// store that says why it is unavailable (a full disk) has it in the message.
func (s *Server) handleReady(c echo.Context) error {
	if s.Pinger != nil {
		if err := s.Pinger.Ping(c.Request().Context()); err != nil {
			s.Logger.Warn("store not ready", slog.Any("error", err))
			if saver.ErrorCode(err) == saver.EUNAVAILABLE {
				return saver.Errorf(saver.EUNAVAILABLE, "Store is not ready: %s", saver.ErrorMessage(err))
			}
			return saver.Errorf(saver.EUNAVAILABLE, "Store is not ready.")
		}
	}
	return respond(c, http.StatusOK, statusResponse{Status: "ok"})
}
