package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// Defaults for claims that do not say: a minute's lease covers most calls to
// a payment or shipping API; a day keeps the key across any realistic retry.
const (
	DefaultLease  = time.Minute
	DefaultKeyTTL = 24 * time.Hour
)

func (s *Server) registerLedgerRoutes(g *echo.Group) {
	g.POST("/idempotency/claim", s.handleClaim)
	g.POST("/idempotency/complete", s.handleComplete)
	g.POST("/idempotency/fail", s.handleFail)
}

type claimRequest struct {
	Key     string `json:"key" msgpack:"key"`
	LeaseMS *int64 `json:"lease_ms" msgpack:"lease_ms"`
	TTLMS   *int64 `json:"ttl_ms" msgpack:"ttl_ms"`
	// ClaimID names the claim across resends (saver.ClaimRequest.ClaimID).
	ClaimID string `json:"claim_id" msgpack:"claim_id"`
}

type claimResponse struct {
	Key   string           `json:"key" msgpack:"key"`
	State saver.ClaimState `json:"state" msgpack:"state"`
	Token string           `json:"token,omitempty" msgpack:"token,omitempty"`
	// LeaseExpiresAtMS is epoch milliseconds; 0 when no lease is held.
	LeaseExpiresAtMS int64             `json:"lease_expires_at_ms" msgpack:"lease_expires_at_ms"`
	Attempt          int               `json:"attempt" msgpack:"attempt"`
	Result           *saver.Typed      `json:"result" msgpack:"result"`
	Error            *saver.ClaimError `json:"error" msgpack:"error"`
}

func (s *Server) handleClaim(c echo.Context) error {
	var req claimRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	lease, err := millis("lease_ms", req.LeaseMS, DefaultLease, saver.MaxLease)
	if err != nil {
		return err
	}
	keyTTL, err := millis("ttl_ms", req.TTLMS, DefaultKeyTTL, saver.MaxTTL)
	if err != nil {
		return err
	}
	in := saver.ClaimRequest{Tenant: s.tenant(c), Key: req.Key, Lease: lease, TTL: keyTTL, ClaimID: req.ClaimID}
	if err := in.Validate(); err != nil {
		return err
	}
	cl, err := s.Ledger.Claim(c.Request().Context(), in)
	if err != nil {
		return err
	}
	if s.Observer != nil {
		s.Observer.ObserveClaim(string(cl.State))
	}
	resp := claimResponse{Key: cl.Key, State: cl.State, Token: cl.Token, Attempt: cl.Attempt, Result: cl.Result, Error: cl.Error}
	if !cl.LeaseExpiresAt.IsZero() {
		resp.LeaseExpiresAtMS = cl.LeaseExpiresAt.UnixMilli()
	}
	return respond(c, http.StatusOK, resp)
}

// millis turns a duration in milliseconds from the wire into a Duration: def
// when absent, EINVALID outside 1 ms to max. The range is checked before the
// multiplication, which wraps: 2^58 + 1000 ms came out as a 1 s lease.
func millis(field string, ms *int64, def, max time.Duration) (time.Duration, error) {
	if ms == nil {
		return def, nil
	}
	if *ms < 1 || *ms > max.Milliseconds() {
		return 0, saver.Errorf(saver.EINVALID, "%s is %d; it must be between 1 and %d (%s).", field, *ms, max.Milliseconds(), max)
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

type completeRequest struct {
	Key    string      `json:"key" msgpack:"key"`
	Token  string      `json:"token" msgpack:"token"`
	Result saver.Typed `json:"result" msgpack:"result"`
}

func (s *Server) handleComplete(c echo.Context) error {
	var req completeRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if err := validKeyToken(req.Key, req.Token); err != nil {
		return err
	}
	if req.Result.Type == "" {
		return saver.Errorf(saver.EINVALID, "result.type is required.")
	}
	if err := s.Ledger.Complete(c.Request().Context(), s.tenant(c), req.Key, req.Token, req.Result); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type failRequest struct {
	Key   string           `json:"key" msgpack:"key"`
	Token string           `json:"token" msgpack:"token"`
	Error saver.ClaimError `json:"error" msgpack:"error"`
}

func (s *Server) handleFail(c echo.Context) error {
	var req failRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if err := validKeyToken(req.Key, req.Token); err != nil {
		return err
	}
	if len(req.Error.Message) > 4096 {
		return saver.Errorf(saver.ETOOLARGE, "error.message is over 4096 bytes.")
	}
	if err := s.Ledger.Fail(c.Request().Context(), s.tenant(c), req.Key, req.Token, req.Error); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func validKeyToken(key, token string) error {
	if err := saver.ValidateID("key", key); err != nil {
		return err
	}
	if token == "" || len(token) > saver.MaxIDBytes {
		return saver.Errorf(saver.EINVALID, "token is required: pass the token of the granted claim.")
	}
	return nil
}
