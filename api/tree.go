package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
)

func (s *Server) registerTreeRoutes(g *echo.Group) {
	g.GET("/threads/:thread_id/tree", s.handleTree)
	g.GET("/threads/:thread_id/tree/path", s.handleTreePath)
	g.GET("/threads/:thread_id/tree/children", s.handleTreeChildren)
	g.GET("/threads/:thread_id/tree/leaves", s.handleTreeLeaves)
	g.GET("/threads/:thread_id/tree/abandoned", s.handleTreeAbandoned)
	g.GET("/threads/:thread_id/tree/context", s.handleTreeContext)
}

// loadTree reads the thread's nodes (keys and links only) and builds its tree.
// Returns ENOTFOUND for a thread with no checkpoint.
func (s *Server) loadTree(c echo.Context, allowed ...string) (*tree.Tree, string, error) {
	tid, err := threadID(c)
	if err != nil {
		return nil, "", err
	}
	if err := onlyParams(c, allowed...); err != nil {
		return nil, "", err
	}
	nodes, err := s.Tree.ListNodes(c.Request().Context(), s.tenant(c), tid)
	if err != nil {
		return nil, "", err
	}
	if len(nodes) == 0 {
		return nil, "", saver.ThreadNotFound(tid)
	}
	return tree.Build(nodes), tid, nil
}

// onlyParams refuses query parameters other than the allowed ones, so a typo
// is an error rather than a silently different answer.
func onlyParams(c echo.Context, allowed ...string) error {
	for name := range c.QueryParams() {
		ok := false
		for _, a := range allowed {
			ok = ok || name == a
		}
		if !ok {
			return saver.Errorf(saver.EINVALID, "Unknown query parameter %q; expected one of %v.", name, allowed)
		}
	}
	return nil
}

// node finds the node of thread tid named by the checkpoint_ns and
// checkpoint_id query parameters; with no checkpoint_id, the head (the live
// path's end).
func node(c echo.Context, t *tree.Tree, tid string) (*tree.Node, error) {
	ns, id := c.QueryParam("checkpoint_ns"), c.QueryParam("checkpoint_id")
	if err := saver.ValidateNS(ns); err != nil {
		return nil, err
	}
	if err := saver.ValidateCheckpointID("checkpoint_id", id); err != nil {
		return nil, err
	}
	if id == "" {
		if ns != "" {
			return nil, saver.Errorf(saver.EINVALID, "checkpoint_ns needs a checkpoint_id.")
		}
		if h := t.Head(); h != nil {
			return h, nil
		}
		return nil, saver.NoCheckpoint(tid, "")
	}
	n := t.Get(ns, id)
	if n == nil {
		return nil, saver.CheckpointNotFound(saver.CheckpointRef{ThreadID: tid, NS: ns, ID: id})
	}
	return n, nil
}

type treeResponse struct {
	ThreadID string       `json:"thread_id" msgpack:"thread_id"`
	Head     *tree.Entry  `json:"head" msgpack:"head"`
	Nodes    []tree.Entry `json:"nodes" msgpack:"nodes"`
}

func (s *Server) handleTree(c echo.Context) error {
	t, tid, err := s.loadTree(c)
	if err != nil {
		return err
	}
	resp := treeResponse{ThreadID: tid, Nodes: t.Compact()}
	if h := t.Head(); h != nil {
		e := h.Entry()
		resp.Head = &e
	}
	return respond(c, http.StatusOK, resp)
}

type nodesResponse struct {
	Nodes []tree.Entry `json:"nodes" msgpack:"nodes"`
}

func nodes(c echo.Context, ns []*tree.Node) error {
	out := tree.Entries(ns)
	if out == nil {
		out = []tree.Entry{}
	}
	return respond(c, http.StatusOK, nodesResponse{Nodes: out})
}

func (s *Server) handleTreePath(c echo.Context) error {
	n, err := s.loadNode(c)
	if err != nil {
		return err
	}
	return nodes(c, n.Path())
}

func (s *Server) handleTreeChildren(c echo.Context) error {
	n, err := s.loadNode(c)
	if err != nil {
		return err
	}
	return nodes(c, n.Children)
}

// loadNode loads the thread's tree and returns the node that
// checkpoint_ns and checkpoint_id name (see node).
func (s *Server) loadNode(c echo.Context) (*tree.Node, error) {
	t, tid, err := s.loadTree(c, "checkpoint_ns", "checkpoint_id")
	if err != nil {
		return nil, err
	}
	return node(c, t, tid)
}

func (s *Server) handleTreeLeaves(c echo.Context) error {
	t, _, err := s.loadTree(c)
	if err != nil {
		return err
	}
	return nodes(c, t.Leaves())
}

type abandonedResponse struct {
	Branches []tree.Branch `json:"branches" msgpack:"branches"`
}

func (s *Server) handleTreeAbandoned(c echo.Context) error {
	t, _, err := s.loadTree(c)
	if err != nil {
		return err
	}
	b := t.Abandoned()
	if b == nil {
		b = []tree.Branch{}
	}
	return respond(c, http.StatusOK, abandonedResponse{Branches: b})
}

type contextResponse struct {
	Text    string `json:"text" msgpack:"text"`
	Drawing string `json:"drawing" msgpack:"drawing"`
}

// handleTreeContext renders the live path for a prompt ("resume context") and
// the whole tree as a text drawing.
func (s *Server) handleTreeContext(c echo.Context) error {
	t, _, err := s.loadTree(c, "limit")
	if err != nil {
		return err
	}
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			return saver.Errorf(saver.EINVALID, "limit must be a non-negative integer.")
		}
	}
	return respond(c, http.StatusOK, contextResponse{Text: t.ResumeContext(limit), Drawing: t.Draw()})
}
