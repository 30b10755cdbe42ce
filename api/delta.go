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
	// Paged says the client follows next: a history over the server's
	// page is answered in pages rather than refused.
	Paged bool `json:"paged" msgpack:"paged"`
	// Known names an ancestor of the target whose history the client
	// holds: the answer stops there (saver.DeltaRequest.Known).
	Known string `json:"known,omitempty" msgpack:"known,omitempty"`
}

type deltaHistoryResponse struct {
	Channels map[string]deltaHistory `json:"channels" msgpack:"channels"`
}

type deltaHistory struct {
	Writes []saver.Write `json:"writes" msgpack:"writes"`
	// Seed is null when the walk reached the root without finding a value.
	Seed *saver.Typed `json:"seed" msgpack:"seed"`
	// Next, present on a page that does not end the history, is the
	// checkpoint id to ask next for this channel: its history there (seed
	// included) comes before these writes. Equal to the request's known,
	// it says that history is the one the client holds.
	Next string `json:"next,omitempty" msgpack:"next,omitempty"`
}

// handleDeltaHistory answers LangGraph's get_delta_channel_history in one
// request, whatever the depth of the chain, as long as its writes and seeds
// fit HistoryPageBytes. A longer history is answered a page at a time to a
// paged request: the newest part of each unfinished channel's history with
// the ancestor to ask for next, where the walk goes on. A request that is
// not paged is refused it (413), since a client unaware of pages would take
// one for the whole. Either way one answer holds about a page, never the
// whole history.
//
// A client that holds the history at an ancestor of the target names it
// as known, and the answer stops there: the writes since, with next known
// for the channels whose history goes on in the held one. A DeltaChannel
// turn then receives the few writes of the last turn rather than its chain
// back to the snapshot. A known that the chain does not reach before its
// seeds is refused (400), for the held history is no part of this one.
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
		MaxBytes:      s.HistoryPageBytes,
		Known:         req.Known,
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
		if h.Next != "" && h.Next != req.Known && !req.Paged {
			return saver.Errorf(saver.ETOOLARGE, "The delta history of channel %q is over the %d bytes of one answer; send paged: true and follow each channel's next.", ch, s.HistoryPageBytes)
		}
		resp.Channels[ch] = deltaHistory{Writes: writes, Seed: h.Seed, Next: h.Next}
	}
	return respond(c, http.StatusOK, resp)
}
