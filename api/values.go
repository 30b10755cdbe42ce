package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/valueview"
)

// minValueBytes leaves room for a value's type and size.
const minValueBytes = 32

// handleCheckpointValues returns a checkpoint's values and pending writes
// decoded for display (valueview): each rendered within value_bytes, the
// messages they hold as a conversation. It is the /ui page's and `saver
// inspect --values`' view. A read for display does not extend the thread's
// expiry, unlike a client's read of the checkpoint.
func (s *Server) handleCheckpointValues(c echo.Context) error {
	tid, err := threadID(c)
	if err != nil {
		return err
	}
	if err := onlyParams(c, "checkpoint_ns", "checkpoint_id", "value_bytes"); err != nil {
		return err
	}
	lim := valueview.DefaultLimits
	if lim.Bytes, err = intParam(c, "value_bytes", lim.Bytes, maxValueBytes); err != nil {
		return err
	}
	if lim.Bytes < minValueBytes { // 0 would mean no bound to Render
		return saver.Errorf(saver.EINVALID, "value_bytes must be an integer from %d to %d.", minValueBytes, maxValueBytes)
	}
	ref := saver.CheckpointRef{Tenant: s.tenant(c), ThreadID: tid, NS: c.QueryParam("checkpoint_ns"), ID: c.QueryParam("checkpoint_id")}
	if err := ref.Validate(); err != nil {
		return err
	}
	t, err := s.Store.GetTuple(c.Request().Context(), ref)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, valueview.ShowCheckpoint(t, lim))
}
