package api

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// strictQuery refuses a query string that does not parse or repeats a
// parameter, on every route. echo's QueryParam reads url.Query, which drops
// what does not parse ("checkpoint_id=c1%zz" or "c1;x" read as no id: the
// latest checkpoint) and keeps only a repeated parameter's first value.
func (s *Server) strictQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := c.Request().URL.RawQuery
		if raw == "" {
			return next(c)
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			return saver.Errorf(saver.EINVALID, "The query string does not parse: %v; escape %% as %%25 and ; as %%3B.", err)
		}
		for name, vs := range q {
			if len(vs) > 1 {
				return saver.Errorf(saver.EINVALID, "Query parameter %.64q is given %d times; give it once.", name, len(vs))
			}
		}
		return next(c)
	}
}
