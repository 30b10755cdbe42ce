package api

import (
	"net"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// clientKey names who a request counts against for the shares of what
// requests hold at once (body bytes, requests in flight): its tenant when
// the server has keys, else the address it comes from, so that on a
// loopback service without keys (every request DefaultTenant's) one local
// process still cannot starve another. The address is the connection's,
// never a header's: X-Forwarded-For is the client's to write, and would
// give it as many shares as it cared to name. Behind a proxy without keys
// every request shares the proxy's address.
func (s *Server) clientKey(c echo.Context) string {
	if s.Keys != nil && s.Keys.Len() > 0 {
		return s.tenant(c)
	}
	return remoteHost(c.Request().RemoteAddr)
}

// remoteHost is the host of a host:port, or all of addr if it has no port.
func remoteHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// limitRequests refuses a request while its client has MaxClientRequests in
// flight, at once (503, Retry-After) rather than after a wait: a client
// spread over many addresses, each under the connection cap per address,
// could otherwise keep every connection the service has busy. The bound is
// the client's own, so its requests past it fail and nobody else's do.
func (s *Server) limitRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.requests == nil {
			return next(c)
		}
		key := s.clientKey(c)
		if !s.requests.tryAcquire(key, 1) {
			return saver.Errorf(saver.EUNAVAILABLE, "Your requests are at their limit of %d in flight; retry once some are answered.", s.requests.limit)
		}
		defer s.requests.release(key, 1)
		return next(c)
	}
}

// budgetBody counts a request's body against the bodies budget and its
// client's share of it until the handler returns (budget.go). It runs after
// authenticate, which names the client; limitBody, before it, has refused
// bodies over MaxBodyBytes and set the body's deadline.
func (s *Server) budgetBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if s.bodies == nil || req.ContentLength == 0 {
			return next(c)
		}
		h := &holding{budget: s.bodies.memoryBudget, client: s.clientKey(c),
			tooLarge: "Request body would take %d bytes in memory once decoded, over the limit of %d request body bytes in memory; send fewer elements per request."}
		defer h.release()
		body, err := s.bodies.body(req.Context(), h, req.Body, req.ContentLength)
		if err != nil {
			return err
		}
		req.Body = body
		// What the body takes once decoded is held as its bytes are: bind
		// takes the scanner's estimate before decoding.
		c.Set(ctxKeyHoldDecoded, func(n int) error { return h.Take(req.Context(), int64(n)) })
		return next(c)
	}
}
