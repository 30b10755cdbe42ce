package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/labstack/echo/v4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

// The response budget (a memoryBudget, "response") bounds the bytes all
// answers that carry stored values hold at once: what the store reads for
// them and their encoding. A request takes its bytes as the store reads
// them (saver.Take, before it decodes them) and as respond encodes the
// answer, and gives them back when the answer is written. Without it a few
// large answers at once took the memory of the process, which a body budget
// cannot prevent: the bytes were put by many small requests. A delta
// history is answered in pages of at most HistoryPageBytes (see
// handleDeltaHistory), so one request holds a page, not its whole history.

// answerOf returns what the request holds of the response budget, if it
// has a budget.
func answerOf(ctx context.Context) (*holding, bool) {
	h, ok := saver.BudgetOf(ctx).(*holding)
	return h, ok
}

// budgetAnswer is the middleware of the routes that answer with stored
// values: the request's context carries its share of the response budget
// (saver.WithBudget), given back once the handler has written the answer.
func (s *Server) budgetAnswer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.responses == nil {
			return next(c)
		}
		a := &holding{budget: s.responses, client: s.clientKey(c),
			tooLarge: "The answer needs %d bytes, more than the %d the service holds for one client's answers at once; ask for less."}
		defer a.release()
		req := c.Request()
		c.SetRequest(req.WithContext(saver.WithBudget(req.Context(), a)))
		return next(c)
	}
}

// encode returns v in the media type the caller asked for, the encoding
// charged to the request's budget (saver.Take) before it is written.
func encode(c echo.Context, v any) (string, []byte, error) {
	mt, b, err := encodeAs(c, v)
	if err != nil {
		return "", nil, err
	}
	if err := saver.Take(c.Request().Context(), int64(len(b))); err != nil {
		return "", nil, err
	}
	return mt, b, nil
}

// encodeAs returns v in the media type the caller asked for.
func encodeAs(c echo.Context, v any) (string, []byte, error) {
	mt := mimeJSON
	var b []byte
	if wantsMsgpack(c.Request()) {
		var err error
		if b, err = msgpack.Marshal(v); err != nil {
			return "", nil, fmt.Errorf("api: encode msgpack response: %w", err)
		}
		mt = mimeMsgpack
	} else {
		// As echo's c.JSON writes it: indented for ?pretty, a newline last.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		if _, pretty := c.QueryParams()["pretty"]; pretty {
			enc.SetIndent("", "  ")
		}
		if err := enc.Encode(v); err != nil {
			return "", nil, fmt.Errorf("api: encode JSON response: %w", err)
		}
		b = buf.Bytes()
	}
	return mt, b, nil
}
