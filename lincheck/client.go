package lincheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"
)

// client speaks the HTTP API in JSON for one simulated user, on connections
// of its own, and sorts every answer into what the history can hold.
type client struct {
	http    *http.Client
	timeout time.Duration
	// failed counts the requests of unknown outcome, reads included: how
	// a fault is felt (Load.WaitFelt). Shared by the load's clients.
	failed *atomic.Int64
}

func newClient(timeout time.Duration, failed *atomic.Int64) *client {
	return &client{http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}, timeout: timeout, failed: failed}
}

// errNotSent is a request that never reached the service: the connection
// was refused (the service is down). It cannot have taken effect, so it is
// left out of the history.
var errNotSent = errors.New("not sent: connection refused")

// errProtocol is an answer the test did not expect from the API (a 400, a
// shape it cannot read): a fault of the test or a bug, never a fault
// injected; it fails the test.
type errProtocol struct{ msg string }

func (e *errProtocol) Error() string { return e.msg }

// reply is an answer: its status and JSON body. Status 0 means the outcome
// is unknown (an error after the request may have been sent, a timeout).
type reply struct {
	Status int
	Body   []byte
	Err    error
}

func (c *client) do(ctx context.Context, base, method, path string, body any) (reply, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if refused(err) {
			return reply{}, errNotSent
		}
		c.failed.Add(1)
		return reply{Err: err}, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.failed.Add(1)
		return reply{Err: err}, nil
	}
	if resp.StatusCode >= 500 {
		// The store failed or timed out: the write may have landed.
		c.failed.Add(1)
		return reply{Err: fmt.Errorf("%d: %s", resp.StatusCode, b)}, nil
	}
	return reply{Status: resp.StatusCode, Body: b}, nil
}

// refused reports whether err is a refused connection: nothing was sent.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED)
}

func unexpected(what string, r reply) error {
	return &errProtocol{fmt.Sprintf("%s: unexpected answer %d: %s", what, r.Status, r.Body)}
}

// headGet reads a thread's head: its latest checkpoint's id, "" if none.
// ok is false when the outcome is unknown.
func (c *client) headGet(ctx context.Context, base, thread string) (head string, ok bool, err error) {
	q := url.Values{"checkpoint_ns": {""}}
	r, err := c.do(ctx, base, http.MethodGet, "/v1/threads/"+url.PathEscape(thread)+"/checkpoint?"+q.Encode(), nil)
	if err != nil || r.Err != nil {
		return "", false, err
	}
	switch r.Status {
	case http.StatusNotFound:
		return "", true, nil
	case http.StatusOK:
		var tup struct {
			ID string `json:"checkpoint_id"`
		}
		if err := json.Unmarshal(r.Body, &tup); err != nil || tup.ID == "" {
			return "", false, unexpected("get "+thread, r)
		}
		return tup.ID, true, nil
	}
	return "", false, unexpected("get "+thread, r)
}

// headPut puts checkpoint id on thread if its head is expect; pad bytes of
// padding go in a blob (0: none).
func (c *client) headPut(ctx context.Context, base, thread, expect, id string, pad int) (Outcome, error) {
	body := map[string]any{
		"checkpoint_ns":        "",
		"checkpoint_id":        id,
		"parent_checkpoint_id": expect,
		"checkpoint":           typed("checkpoint "+id, 0),
		"metadata":             map[string]any{"source": "loop", "step": 1},
		"channel_versions":     map[string]string{},
		"blobs":                []any{},
		"expected_head":        expect,
	}
	if pad > 0 {
		body["channel_versions"] = map[string]string{"pad": id}
		body["blobs"] = []any{map[string]any{"channel": "pad", "version": id, "value": typed("pad "+id, pad)}}
	}
	r, err := c.do(ctx, base, http.MethodPost, "/v1/threads/"+url.PathEscape(thread)+"/checkpoints", body)
	if err != nil || r.Err != nil {
		return Unknown, err
	}
	switch r.Status {
	case http.StatusOK:
		return OK, nil
	case http.StatusConflict:
		return Refused, nil
	}
	return Unknown, unexpected("put "+thread+"/"+id, r)
}

// typed is a msgpack-typed value whose bytes start with label, padded to
// size bytes.
func typed(label string, size int) map[string]any {
	data := []byte(label)
	if len(data) < size {
		data = append(data, bytes.Repeat([]byte{'.'}, size-len(data))...)
	}
	return map[string]any{"type": "bytes", "data": data}
}

// Lease and lifetime of the test's claims: longer than any run, so that a
// lease never runs out under the model.
const (
	leaseMS = int64(time.Hour / time.Millisecond)
	keyTTL  = 2 * leaseMS
)

// claim claims key; out.Outcome is Unknown when the answer was lost.
func (c *client) claim(ctx context.Context, base, key string) (LedgerOutput, error) {
	r, err := c.do(ctx, base, http.MethodPost, "/v1/idempotency/claim", map[string]any{"key": key, "lease_ms": leaseMS, "ttl_ms": keyTTL})
	if err != nil || r.Err != nil {
		return LedgerOutput{}, err
	}
	if r.Status != http.StatusOK {
		return LedgerOutput{}, unexpected("claim "+key, r)
	}
	var cl struct {
		State  string `json:"state"`
		Token  string `json:"token"`
		Result *struct {
			Data []byte `json:"data"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &cl); err != nil {
		return LedgerOutput{}, unexpected("claim "+key, r)
	}
	out := LedgerOutput{Outcome: OK, State: cl.State, Token: cl.Token}
	if cl.Result != nil {
		out.Result = string(cl.Result.Data)
	}
	switch {
	case cl.State == "claimed" && cl.Token != "",
		cl.State == "in_progress",
		cl.State == "completed" && cl.Result != nil:
		return out, nil
	}
	return LedgerOutput{}, unexpected("claim "+key, r)
}

// complete completes the claim token holds on key with result.
func (c *client) complete(ctx context.Context, base, key, token, result string) (Outcome, error) {
	r, err := c.do(ctx, base, http.MethodPost, "/v1/idempotency/complete", map[string]any{
		"key": key, "token": token, "result": map[string]any{"type": "bytes", "data": []byte(result)},
	})
	if err != nil || r.Err != nil {
		return Unknown, err
	}
	switch r.Status {
	case http.StatusNoContent:
		return OK, nil
	case http.StatusConflict:
		return Refused, nil
	case http.StatusNotFound:
		return NotFound, nil
	}
	return Unknown, unexpected("complete "+key, r)
}

// itemValue is what the test stores in an item: V, unique in the run, and
// padding (for S3 on DynamoDB).
type itemValue struct {
	V   int    `json:"v"`
	Pad string `json:"pad,omitempty"`
}

// itemGet reads the item key of namespace ns: its V, 0 if absent.
func (c *client) itemGet(ctx context.Context, base string, ns []string, key string) (v int, ok bool, err error) {
	r, err := c.do(ctx, base, http.MethodPost, "/v1/store/batch", map[string]any{
		"ops": []any{map[string]any{"op": "get", "namespace": ns, "key": key}},
	})
	if err != nil || r.Err != nil {
		return 0, false, err
	}
	if r.Status != http.StatusOK {
		return 0, false, unexpected("store get "+key, r)
	}
	var res struct {
		Results []struct {
			Item *struct {
				Value itemValue `json:"value"`
			} `json:"item"`
		} `json:"results"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil || len(res.Results) != 1 {
		return 0, false, unexpected("store get "+key, r)
	}
	if it := res.Results[0].Item; it != nil {
		if it.Value.V == 0 {
			return 0, false, unexpected("store get "+key, r)
		}
		return it.Value.V, true, nil
	}
	return 0, true, nil
}

// itemPut stores value (nil: deletes) under key of namespace ns.
func (c *client) itemPut(ctx context.Context, base string, ns []string, key string, value *itemValue) (Outcome, error) {
	r, err := c.do(ctx, base, http.MethodPost, "/v1/store/batch", map[string]any{
		"ops": []any{map[string]any{"op": "put", "namespace": ns, "key": key, "value": value}},
	})
	if err != nil || r.Err != nil {
		return Unknown, err
	}
	if r.Status != http.StatusOK {
		return Unknown, unexpected("store put "+key, r)
	}
	return OK, nil
}
