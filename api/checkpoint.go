package api

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

func (s *Server) registerCheckpointRoutes(g *echo.Group) {
	g.POST("/threads/:thread_id/checkpoints", s.handleCheckpointPut)
	g.GET("/threads/:thread_id/checkpoint", s.handleCheckpointGet, s.budgetAnswer)
	g.GET("/threads/:thread_id/checkpoint/values", s.handleCheckpointValues, s.budgetAnswer)
	g.POST("/threads/:thread_id/writes", s.handleWritesPut)
	g.POST("/threads/:thread_id/delta-history", s.handleDeltaHistory, s.budgetAnswer)
	g.POST("/checkpoints/search", s.handleCheckpointSearch, s.budgetAnswer)
}

// threadID returns the unescaped thread id of the path. Routing runs on the
// escaped path (see newEcho), so the parameter is always escaped here.
func threadID(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("thread_id"))
	if err != nil {
		return "", saver.Errorf(saver.EINVALID, "thread_id in the path is not properly escaped.")
	}
	return id, saver.ValidateThreadID(id)
}

type putCheckpointRequest struct {
	CheckpointNS       string            `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	CheckpointID       string            `json:"checkpoint_id" msgpack:"checkpoint_id"`
	ParentCheckpointID string            `json:"parent_checkpoint_id" msgpack:"parent_checkpoint_id"`
	Checkpoint         saver.Typed       `json:"checkpoint" msgpack:"checkpoint"`
	Metadata           map[string]any    `json:"metadata" msgpack:"metadata"`
	ChannelVersions    map[string]string `json:"channel_versions" msgpack:"channel_versions"`
	Blobs              []saver.Blob      `json:"blobs" msgpack:"blobs"`
	// Scope is the thread's retention scope; "" takes the server's default.
	Scope saver.Scope `json:"scope" msgpack:"scope"`
	// ExpectedHead makes the put conditional on the namespace's latest
	// checkpoint id ("" = no checkpoint yet); absent or null: no condition.
	ExpectedHead *string `json:"expected_head" msgpack:"expected_head"`
}

type configResponse struct {
	ThreadID     string `json:"thread_id" msgpack:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id" msgpack:"checkpoint_id"`
}

func (s *Server) handleCheckpointPut(c echo.Context) error {
	tid, err := threadID(c)
	if err != nil {
		return err
	}
	var req putCheckpointRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if err := req.Scope.Validate(); err != nil {
		return err
	}
	scope := s.TTL.Resolve(req.Scope)
	in := saver.PutCheckpoint{
		Checkpoint: saver.Checkpoint{
			CheckpointRef:   saver.CheckpointRef{Tenant: s.tenant(c), ThreadID: tid, NS: req.CheckpointNS, ID: req.CheckpointID},
			ParentID:        req.ParentCheckpointID,
			Body:            req.Checkpoint,
			Metadata:        req.Metadata,
			ChannelVersions: req.ChannelVersions,
			Scope:           scope,
			ExpiresAt:       s.TTL.ExpiresAt(scope, s.Now()),
		},
		Blobs:      req.Blobs,
		ExpectHead: req.ExpectedHead,
	}
	if err := in.Validate(); err != nil {
		return err
	}
	if in.ExpectHead != nil && !s.HeadGuard {
		return saver.Errorf(saver.EINVALID, "expected_head is not supported by this store; send the put without it.")
	}
	if err := s.Store.PutCheckpoint(c.Request().Context(), in); err != nil {
		return err
	}
	return respond(c, http.StatusOK, configResponse{ThreadID: tid, CheckpointNS: in.NS, CheckpointID: in.ID})
}

type tupleResponse struct {
	ThreadID           string            `json:"thread_id" msgpack:"thread_id"`
	CheckpointNS       string            `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	CheckpointID       string            `json:"checkpoint_id" msgpack:"checkpoint_id"`
	ParentCheckpointID string            `json:"parent_checkpoint_id" msgpack:"parent_checkpoint_id"`
	Checkpoint         saver.Typed       `json:"checkpoint" msgpack:"checkpoint"`
	Metadata           saver.Metadata    `json:"metadata" msgpack:"metadata"`
	ChannelVersions    map[string]string `json:"channel_versions" msgpack:"channel_versions"`
	Values             []saver.Blob      `json:"values" msgpack:"values"`
	Writes             []saver.Write     `json:"writes" msgpack:"writes"`
	Scope              saver.Scope       `json:"scope" msgpack:"scope"`
	// ExpiresAt is epoch seconds; 0 means never.
	ExpiresAt int64 `json:"expires_at" msgpack:"expires_at"`
}

func newTupleResponse(t *saver.Tuple) tupleResponse {
	r := tupleResponse{
		ThreadID:           t.ThreadID,
		CheckpointNS:       t.NS,
		CheckpointID:       t.ID,
		ParentCheckpointID: t.ParentID,
		Checkpoint:         t.Body,
		Metadata:           t.Metadata,
		ChannelVersions:    t.ChannelVersions,
		Values:             t.Values,
		Writes:             t.Writes,
		Scope:              t.Scope,
		ExpiresAt:          t.ExpiresAt,
	}
	// Empty collections go out as [] and {}, never null, so clients need no
	// special case.
	if r.Metadata == nil {
		r.Metadata = saver.Metadata{}
	}
	if r.ChannelVersions == nil {
		r.ChannelVersions = map[string]string{}
	}
	if r.Values == nil {
		r.Values = []saver.Blob{}
	}
	if r.Writes == nil {
		r.Writes = []saver.Write{}
	}
	return r
}

func (s *Server) handleCheckpointGet(c echo.Context) error {
	tid, err := threadID(c)
	if err != nil {
		return err
	}
	for name := range c.QueryParams() {
		if name != "checkpoint_ns" && name != "checkpoint_id" {
			return saver.Errorf(saver.EINVALID, "Unknown query parameter %q; expected checkpoint_ns or checkpoint_id.", name)
		}
	}
	ref := saver.CheckpointRef{Tenant: s.tenant(c), ThreadID: tid, NS: c.QueryParam("checkpoint_ns"), ID: c.QueryParam("checkpoint_id")}
	if err := ref.Validate(); err != nil {
		return err
	}
	t, err := s.Store.GetTuple(c.Request().Context(), ref)
	if err != nil {
		return err
	}
	if err := s.refresh(c, t); err != nil {
		return err
	}
	return respond(c, http.StatusOK, newTupleResponse(t))
}

// refresh extends a read checkpoint's expiry when the policy asks for it, so
// that a thread in use never expires under its agent.
func (s *Server) refresh(c echo.Context, t *saver.Tuple) error {
	if s.Expirer == nil {
		return nil
	}
	exp, ok := s.TTL.Refresh(&t.Checkpoint, s.Now())
	if !ok {
		return nil
	}
	if err := s.Expirer.SetExpiry(c.Request().Context(), t.CheckpointRef, exp); err != nil {
		return err
	}
	t.ExpiresAt = exp
	return nil
}

type pinRequest struct {
	CheckpointNS string `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id" msgpack:"checkpoint_id"`
}

// handleCheckpointPin makes a checkpoint, its blobs and its writes never
// expire, whatever the thread's scope.
func (s *Server) handleCheckpointPin(c echo.Context) error {
	tid, err := threadID(c)
	if err != nil {
		return err
	}
	var req pinRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	ref := saver.CheckpointRef{Tenant: s.tenant(c), ThreadID: tid, NS: req.CheckpointNS, ID: req.CheckpointID}
	if err := ref.Validate(); err != nil {
		return err
	}
	if err := saver.RequireCheckpointID(ref); err != nil {
		return err
	}
	if err := s.Expirer.SetExpiry(c.Request().Context(), ref, 0); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type searchRequest struct {
	ThreadID     *string        `json:"thread_id" msgpack:"thread_id"`
	CheckpointNS *string        `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	CheckpointID *string        `json:"checkpoint_id" msgpack:"checkpoint_id"`
	Before       *string        `json:"before" msgpack:"before"`
	Filter       map[string]any `json:"filter" msgpack:"filter"`
	Limit        *int           `json:"limit" msgpack:"limit"`
	Cursor       *string        `json:"cursor" msgpack:"cursor"`
}

type searchResponse struct {
	Tuples     []tupleResponse `json:"tuples" msgpack:"tuples"`
	NextCursor *string         `json:"next_cursor" msgpack:"next_cursor"`
}

func (s *Server) handleCheckpointSearch(c echo.Context) error {
	var req searchRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	f := saver.ListFilter{Tenant: s.tenant(c), NS: req.CheckpointNS, Metadata: req.Filter}
	if req.ThreadID != nil {
		if err := saver.ValidateThreadID(*req.ThreadID); err != nil {
			return err
		}
		f.ThreadID = *req.ThreadID
	}
	if req.CheckpointID != nil {
		f.CheckpointID = *req.CheckpointID
	}
	if req.Before != nil {
		f.Before = *req.Before
	}
	if req.Cursor != nil {
		pos, err := decodeCursor(*req.Cursor)
		if err != nil {
			return err
		}
		f.After = &pos
	}
	// Ask for one more than a page so we know whether another page follows.
	page := s.PageSize
	if req.Limit != nil {
		if *req.Limit < 0 {
			return saver.Errorf(saver.EINVALID, "limit must not be negative.")
		}
		if *req.Limit < page {
			page = *req.Limit
		}
	}
	f.Limit = page + 1
	if err := f.Validate(); err != nil {
		return err
	}
	if page == 0 {
		return respond(c, http.StatusOK, searchResponse{Tuples: []tupleResponse{}})
	}
	for {
		mt, b, err := s.searchPage(c, f, page, req.Limit)
		// A page too large for the caller's share of the response budget
		// is answered shorter, its cursor leading on: the clients follow
		// cursors, so a list of large checkpoints still reads whole.
		var over overShare
		if errors.As(err, &over) && page > 1 {
			if a, ok := answerOf(c.Request().Context()); ok {
				a.release()
			}
			page /= 2
			f.Limit = page + 1
			continue
		}
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, mt, b)
	}
}

// searchPage reads up to page tuples and encodes them with the cursor of
// the next page, if another follows and the caller's limit wants it.
func (s *Server) searchPage(c echo.Context, f saver.ListFilter, page int, limit *int) (string, []byte, error) {
	tuples, err := s.Store.ListCheckpoints(c.Request().Context(), f)
	if err != nil {
		return "", nil, err
	}
	resp := searchResponse{Tuples: []tupleResponse{}}
	more := len(tuples) > page
	if more {
		tuples = tuples[:page]
	}
	for _, t := range tuples {
		resp.Tuples = append(resp.Tuples, newTupleResponse(t))
	}
	if more && (limit == nil || *limit > page) {
		cur := encodeCursor(tuples[len(tuples)-1].Position())
		resp.NextCursor = &cur
	}
	return encode(c, resp)
}

// Cursors are opaque to clients: base64url of the msgpack of a position.
func encodeCursor(p saver.ListPosition) string {
	b, _ := msgpack.Marshal(p) // a struct of strings always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (saver.ListPosition, error) {
	var p saver.ListPosition
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = decodeMsgpack(b, &p, nil) // a cursor comes back from the client: bytes like any other
	}
	if err != nil || p.ID == "" {
		return p, saver.Errorf(saver.EINVALID, "cursor is not one this server issued.")
	}
	return p, nil
}
