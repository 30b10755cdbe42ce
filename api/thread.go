package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// MaxIDsPerRequest bounds the thread or run ids of one prune or delete call.
const MaxIDsPerRequest = 1000

func (s *Server) registerThreadRoutes(g *echo.Group) {
	g.DELETE("/threads/:thread_id", s.handleThreadDelete)
	g.POST("/threads/:thread_id/copy", s.handleThreadCopy)
	g.POST("/threads/prune", s.handleThreadPrune)
	g.POST("/runs/delete", s.handleRunsDelete)
}

func (s *Server) handleThreadDelete(c echo.Context) error {
	tid, err := threadID(c)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteThread(c.Request().Context(), s.tenant(c), tid); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type copyThreadRequest struct {
	TargetThreadID string `json:"target_thread_id" msgpack:"target_thread_id"`
}

func (s *Server) handleThreadCopy(c echo.Context) error {
	src, err := threadID(c)
	if err != nil {
		return err
	}
	var req copyThreadRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if err := saver.ValidateThreadID(req.TargetThreadID); err != nil {
		return saver.Errorf(saver.EINVALID, "target_thread_id: %s", saver.ErrorMessage(err))
	}
	if req.TargetThreadID == src {
		return saver.Errorf(saver.EINVALID, "target_thread_id is the source thread.")
	}
	if err := s.Store.CopyThread(c.Request().Context(), s.tenant(c), src, req.TargetThreadID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type pruneRequest struct {
	ThreadIDs []string `json:"thread_ids" msgpack:"thread_ids"`
	Strategy  string   `json:"strategy" msgpack:"strategy"`
}

func (s *Server) handleThreadPrune(c echo.Context) error {
	var req pruneRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	strategy := saver.PruneStrategy(req.Strategy)
	if strategy == "" {
		strategy = saver.PruneKeepLatest
	}
	if err := strategy.Validate(); err != nil {
		return err
	}
	if err := validIDs("thread_ids", req.ThreadIDs); err != nil {
		return err
	}
	for _, id := range req.ThreadIDs {
		if err := saver.ValidateThreadID(id); err != nil {
			return err
		}
	}
	if err := s.Store.Prune(c.Request().Context(), s.tenant(c), req.ThreadIDs, strategy); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type deleteRunsRequest struct {
	RunIDs []string `json:"run_ids" msgpack:"run_ids"`
}

func (s *Server) handleRunsDelete(c echo.Context) error {
	var req deleteRunsRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if err := validIDs("run_ids", req.RunIDs); err != nil {
		return err
	}
	if err := s.Store.DeleteForRuns(c.Request().Context(), s.tenant(c), req.RunIDs); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func validIDs(field string, ids []string) error {
	if len(ids) > MaxIDsPerRequest {
		return saver.Errorf(saver.ETOOLARGE, "%d %s in one request; the limit is %d.", len(ids), field, MaxIDsPerRequest)
	}
	for _, id := range ids {
		if id == "" {
			return saver.Errorf(saver.EINVALID, "%s must not contain an empty id.", field)
		}
		if err := saver.ValidateID(field, id); err != nil {
			return err
		}
	}
	return nil
}
