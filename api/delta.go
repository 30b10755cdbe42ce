package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

type deltaHistoryRequest struct {
	CheckpointNS string `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	// CheckpointID names the target; "" means the latest of the namespace.
	CheckpointID string   `json:"checkpoint_id" msgpack:"checkpoint_id"`
	Channels     []string `json:"channels" msgpack:"channels"`
}

type deltaHistoryResponse struct {
	Channels map[string]deltaHistory `json:"channels" msgpack:"channels"`
}

type deltaHistory struct {
	Writes []saver.Write `json:"writes" msgpack:"writes"`
	// Seed is null when the walk reached the root without finding a value.
	Seed *saver.Typed `json:"seed" msgpack:"seed"`
}

// handleDeltaHistory answers LangGraph's get_delta_channel_history in one
// request, whatever the depth of the chain.
func (s *Server) handleDeltaHistory(c echo.Context) error {
	tid, err := threadID(c)
	if err != nil {
		return err
	}
	var req deltaHistoryRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	in := saver.DeltaRequest{
		CheckpointRef: saver.CheckpointRef{Tenant: s.tenant(c), ThreadID: tid, NS: req.CheckpointNS, ID: req.CheckpointID},
		Channels:      req.Channels,
	}
	if err := in.Validate(); err != nil {
		return err
	}
	hs, err := s.Store.DeltaHistory(c.Request().Context(), in)
	if err != nil {
		return err
	}
	resp := deltaHistoryResponse{Channels: make(map[string]deltaHistory, len(hs))}
	for ch, h := range hs {
		writes := h.Writes
		if writes == nil {
			writes = []saver.Write{}
		}
		resp.Channels[ch] = deltaHistory{Writes: writes, Seed: h.Seed}
	}
	return respond(c, http.StatusOK, resp)
}
