package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// MaxWritesPerRequest bounds one put_writes call; LangGraph sends one call per
// task, so a real task never comes close.
const MaxWritesPerRequest = 1000

type putWritesRequest struct {
	CheckpointNS string        `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	CheckpointID string        `json:"checkpoint_id" msgpack:"checkpoint_id"`
	Writes       []saver.Write `json:"writes" msgpack:"writes"`
	Scope        saver.Scope   `json:"scope" msgpack:"scope"`
}

func (s *Server) handleWritesPut(c echo.Context) error {
	tid, err := threadID(c)
	if err != nil {
		return err
	}
	var req putWritesRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if err := req.Scope.Validate(); err != nil {
		return err
	}
	if len(req.Writes) > MaxWritesPerRequest {
		return saver.Errorf(saver.ETOOLARGE, "%d writes in one request; the limit is %d.", len(req.Writes), MaxWritesPerRequest)
	}
	in := saver.PutWrites{
		CheckpointRef: saver.CheckpointRef{Tenant: s.tenant(c), ThreadID: tid, NS: req.CheckpointNS, ID: req.CheckpointID},
		Writes:        req.Writes,
		ExpiresAt:     s.TTL.ExpiresAt(req.Scope, s.Now()),
	}
	if err := in.Validate(); err != nil {
		return err
	}
	if err := s.Store.PutWrites(c.Request().Context(), in); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
