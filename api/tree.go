package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/resume"
	"github.com/saver-dev/saver/tree"
)

func (s *Server) registerTreeRoutes(g *echo.Group) {
	g.GET("/threads/:thread_id/tree", s.handleTree)
	g.GET("/threads/:thread_id/tree/path", s.handleTreePath)
	g.GET("/threads/:thread_id/tree/children", s.handleTreeChildren)
	g.GET("/threads/:thread_id/tree/leaves", s.handleTreeLeaves)
	g.GET("/threads/:thread_id/tree/abandoned", s.handleTreeAbandoned)
	g.GET("/threads/:thread_id/tree/context", s.handleTreeContext)
	g.GET("/threads/:thread_id/tree/messages", s.handleTreeMessages)
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
	if _, err := columns(c); err != nil {
		return nil, "", err
	}
	var t *tree.Tree
	if s.Trees != nil {
		t, err = s.Trees.Tree(c.Request().Context(), s.tenant(c), tid)
	} else {
		var nodes []saver.Node
		nodes, err = s.Tree.ListNodes(c.Request().Context(), s.tenant(c), tid)
		t = tree.Build(nodes)
	}
	if err != nil {
		return nil, "", err
	}
	if t.Len() == 0 {
		return nil, "", saver.ThreadNotFound(tid)
	}
	return t, tid, nil
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

// columns reads the layout query parameter of an answer of tree entries:
// "rows" (the default) is one map per entry, "columns" one array per field
// (entryColumns), for clients that decode long answers into objects of
// their own.
func columns(c echo.Context) (bool, error) {
	switch c.QueryParam("layout") {
	case "", "rows":
		return false, nil
	case "columns":
		return true, nil
	}
	return false, saver.Errorf(saver.EINVALID, "layout must be rows or columns.")
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
	ThreadID string      `json:"thread_id" msgpack:"thread_id"`
	Head     *tree.Entry `json:"head" msgpack:"head"`
	Nodes    entryList   `json:"nodes" msgpack:"nodes"`
}

// treeColumnsResponse is treeResponse with layout=columns.
type treeColumnsResponse struct {
	ThreadID string       `json:"thread_id" msgpack:"thread_id"`
	Head     *tree.Entry  `json:"head" msgpack:"head"`
	Columns  entryColumns `json:"columns" msgpack:"columns"`
}

func (s *Server) handleTree(c echo.Context) error {
	t, tid, err := s.loadTree(c, "layout")
	if err != nil {
		return err
	}
	var head *tree.Entry
	if h := t.Head(); h != nil {
		e := h.Entry()
		head = &e
	}
	if cols, _ := columns(c); cols {
		return respond(c, http.StatusOK, treeColumnsResponse{ThreadID: tid, Head: head, Columns: t.Compact()})
	}
	return respond(c, http.StatusOK, treeResponse{ThreadID: tid, Head: head, Nodes: t.Compact()})
}

type nodesResponse struct {
	Nodes entryList `json:"nodes" msgpack:"nodes"`
}

// columnsResponse is nodesResponse with layout=columns.
type columnsResponse struct {
	Columns entryColumns `json:"columns" msgpack:"columns"`
}

// nodes answers ns as tree entries, in the layout loadTree checked.
func nodes(c echo.Context, ns []*tree.Node) error {
	out := tree.Entries(ns)
	if out == nil {
		out = []tree.Entry{}
	}
	if cols, _ := columns(c); cols {
		return respond(c, http.StatusOK, columnsResponse{Columns: out})
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
	t, tid, err := s.loadTree(c, "checkpoint_ns", "checkpoint_id", "layout")
	if err != nil {
		return nil, err
	}
	return node(c, t, tid)
}

func (s *Server) handleTreeLeaves(c echo.Context) error {
	t, _, err := s.loadTree(c, "layout")
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
	// Context is the live path's steps with what ran in each; only with
	// values=true, which also makes Text their rendering.
	Context *resume.Context `json:"context,omitempty" msgpack:"context,omitempty"`
}

// maxValueBytes bounds value_bytes: a rendering is for a prompt, not a
// way around the response budget.
const maxValueBytes = 1 << 16

// handleTreeContext renders the live path for a prompt ("resume context") and
// the whole tree as a text drawing. With values=true each step says what ran
// and what it wrote, each value cut at value_bytes, and checkpoint_ns picks
// the live path of a subgraph namespace (to its newest checkpoint).
func (s *Server) handleTreeContext(c echo.Context) error {
	t, tid, err := s.loadTree(c, "limit", "values", "value_bytes", "checkpoint_ns")
	if err != nil {
		return err
	}
	limit, err := intParam(c, "limit", 0, 1<<31-1)
	if err != nil {
		return err
	}
	values := false
	if v := c.QueryParam("values"); v != "" {
		if values, err = strconv.ParseBool(v); err != nil {
			return saver.Errorf(saver.EINVALID, "values must be true or false.")
		}
	}
	valueBytes, err := intParam(c, "value_bytes", resume.DefaultValueBytes, maxValueBytes)
	if err != nil {
		return err
	}
	if !values {
		if c.QueryParam("value_bytes") != "" || c.QueryParam("checkpoint_ns") != "" {
			return saver.Errorf(saver.EINVALID, "value_bytes and checkpoint_ns need values=true.")
		}
		return respond(c, http.StatusOK, contextResponse{Text: t.ResumeContext(limit), Drawing: t.Draw()})
	}
	head, err := nsHead(c, t, tid)
	if err != nil {
		return err
	}
	rc, err := resume.Build(c.Request().Context(), s.Store, s.tenant(c), t, head, resume.Options{Limit: limit, ValueBytes: valueBytes})
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, contextResponse{Text: rc.Text(), Drawing: t.Draw(), Context: rc})
}

type messagesResponse struct {
	Messages []resume.LiveMessage `json:"messages" msgpack:"messages"`
}

// handleTreeMessages returns the live path's messages, ready for a chat model.
func (s *Server) handleTreeMessages(c echo.Context) error {
	t, tid, err := s.loadTree(c, "checkpoint_ns")
	if err != nil {
		return err
	}
	head, err := nsHead(c, t, tid)
	if err != nil {
		return err
	}
	ms, err := resume.Messages(c.Request().Context(), s.Store, s.tenant(c), head)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, messagesResponse{Messages: ms})
}

// nsHead returns the end of the live path of the checkpoint_ns query
// parameter's namespace: the thread's head for the root namespace, the
// newest checkpoint of a subgraph namespace.
func nsHead(c echo.Context, t *tree.Tree, tid string) (*tree.Node, error) {
	ns := c.QueryParam("checkpoint_ns")
	if err := saver.ValidateNS(ns); err != nil {
		return nil, err
	}
	if ns == "" {
		if h := t.Head(); h != nil {
			return h, nil
		}
		return nil, saver.NoCheckpoint(tid, "")
	}
	var head *tree.Node
	for _, n := range t.Leaves() { // by namespace, then id: the last wins
		if n.NS == ns {
			head = n
		}
	}
	if head == nil {
		return nil, saver.NoCheckpoint(tid, ns)
	}
	return head, nil
}

// intParam reads an integer query parameter in [0, most], def when absent.
func intParam(c echo.Context, name string, def, most int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > most {
		return 0, saver.Errorf(saver.EINVALID, "%s must be an integer from 0 to %d.", name, most)
	}
	return n, nil
}
