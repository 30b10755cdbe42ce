package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/saver-dev/saver"
)

// Keys maps API keys to tenants. Lookups compare against every key in
// constant time, so response timing tells nothing about how close a guess was.
type Keys struct {
	entries []keyEntry
}

type keyEntry struct {
	digest [sha256.Size]byte
	tenant string
}

// NewKeys builds the key table from key -> tenant. Keys shorter than 16
// characters are refused: they can be guessed.
func NewKeys(tenants map[string]string) (*Keys, error) {
	k := &Keys{}
	for key, tenant := range tenants {
		if len(key) < 16 {
			return nil, fmt.Errorf("api key for tenant %q is %d characters long; use at least 16", tenant, len(key))
		}
		if tenant == "" || len(tenant) > saver.MaxIDBytes {
			return nil, fmt.Errorf("tenant name must be 1 to %d bytes", saver.MaxIDBytes)
		}
		k.entries = append(k.entries, keyEntry{digest: sha256.Sum256([]byte(key)), tenant: tenant})
	}
	return k, nil
}

// Len returns the number of keys.
func (k *Keys) Len() int { return len(k.entries) }

// Tenant returns the tenant of key. Comparing digests keeps the comparison
// length-independent; the loop never exits early.
func (k *Keys) Tenant(key string) (string, bool) {
	d := sha256.Sum256([]byte(key))
	tenant, found := "", 0
	for _, e := range k.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			tenant, found = e.tenant, 1
		}
	}
	return tenant, found == 1
}

// authenticate resolves the caller's tenant from "Authorization: Bearer KEY"
// or "X-API-Key: KEY". Without keys configured every caller is the default
// tenant; cmd/saver allows that only on loopback.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.Keys == nil || s.Keys.Len() == 0 {
			c.Set("tenant", DefaultTenant)
			return next(c)
		}
		key := c.Request().Header.Get("X-API-Key")
		if h := c.Request().Header.Get(echo.HeaderAuthorization); key == "" && h != "" {
			scheme, token, ok := strings.Cut(h, " ")
			if ok && strings.EqualFold(scheme, "Bearer") {
				key = strings.TrimSpace(token)
			}
		}
		if key == "" {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="saver"`)
			return saver.Errorf(saver.EUNAUTHORIZED, "Missing API key: send Authorization: Bearer <key>.")
		}
		tenant, ok := s.Keys.Tenant(key)
		if !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="saver", error="invalid_token"`)
			return saver.Errorf(saver.EUNAUTHORIZED, "Invalid API key.")
		}
		c.Set("tenant", tenant)
		return next(c)
	}
}

// tenant returns the tenant the request acts for, set by authenticate.
func (s *Server) tenant(c echo.Context) string {
	if t, ok := c.Get("tenant").(string); ok && t != "" {
		return t
	}
	// Unreachable for routes behind authenticate; fail closed otherwise.
	panic("api: tenant not resolved for " + c.Path())
}
