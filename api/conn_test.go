package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
)

// openServer serves store on a free loopback port with short timeouts, set
// by tune, and closes it when the test ends.
func openServer(t *testing.T, store *apitest.Store, tune func(*api.Server)) *api.Server {
	t.Helper()
	s := MustMockServer(t, store)
	tune(s)
	if err := s.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func dial(t *testing.T, s *api.Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed blocks until the server closes c, which must happen within
// limit, and returns how long that took. Reading waits for the close itself,
// so nothing here sleeps.
func waitClosed(t *testing.T, c net.Conn, r *bufio.Reader, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	_, err := r.ReadByte()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("the connection is still open after %s", limit)
	case err == nil:
		t.Fatal("the server wrote more on the connection instead of closing it")
	}
	return time.Since(start)
}

// get sends a GET on c and reads its answer.
func get(t *testing.T, c net.Conn, r *bufio.Reader, path string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestConnections_Timeouts: the server never closed a connection, so 500 idle
// keep-alive connections and 500 slow uploads stayed open as long as their
// clients liked. Each kind is now closed after its timeout.
func TestConnections_Timeouts(t *testing.T) {
	const short = 300 * time.Millisecond
	tune := func(s *api.Server) {
		s.ReadHeaderTimeout, s.BodyTimeout, s.IdleTimeout, s.WriteTimeout = short, short, short, 5*time.Second
	}

	t.Run("Idle", func(t *testing.T) {
		s := openServer(t, &apitest.Store{}, tune)
		c := dial(t, s)
		r := bufio.NewReader(c)
		if resp := get(t, c, r, "/healthz"); resp.StatusCode != 200 {
			t.Fatalf("Code=%d", resp.StatusCode)
		}
		if d := waitClosed(t, c, r, 10*time.Second); d < short/2 {
			t.Fatalf("closed after %s, before the idle timeout", d)
		}
	})

	t.Run("SlowHeaders", func(t *testing.T) {
		s := openServer(t, &apitest.Store{}, tune)
		c := dial(t, s)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, c, bufio.NewReader(c), 10*time.Second)
	})

	t.Run("SlowBody", func(t *testing.T) {
		s := openServer(t, &apitest.Store{}, tune) // the store is never reached
		c := dial(t, s)
		// 100 bytes announced, 10 sent, the rest never.
		if _, err := io.WriteString(c, "POST /v1/threads/t/copy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"target_\""); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusRequestTimeout || body.Error.Code != saver.EINVALID {
			t.Fatalf("Code=%d, body %+v; want 408 invalid", resp.StatusCode, body)
		}
		waitClosed(t, c, r, 10*time.Second)
	})

	t.Run("BodyInTimeKeepsStoreWork", func(t *testing.T) {
		// The body deadline is lifted once the body is in: store work that
		// outlasts it is not cancelled.
		entered := make(chan struct{})
		s := openServer(t, &apitest.Store{CopyThreadFn: func(ctx context.Context, _, _, _ string) error {
			close(entered)
			timer := time.NewTimer(3 * short)
			defer timer.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C: // store work of three body timeouts
				return nil
			}
		}}, tune)
		resp, err := http.Post("http://"+s.Addr()+"/v1/threads/t/copy", "application/json", strings.NewReader(`{"target_thread_id":"u"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		<-entered
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("Code=%d, want 204", resp.StatusCode)
		}
	})

	t.Run("SlowHandlerPastWriteTimeout", func(t *testing.T) {
		// An answer not written within the write timeout is cut off.
		s := openServer(t, &apitest.Store{GetTupleFn: func(ctx context.Context, _ saver.CheckpointRef) (*saver.Tuple, error) {
			<-ctx.Done() // the request timeout, after the write timeout
			return nil, ctx.Err()
		}}, func(s *api.Server) {
			tune(s)
			s.WriteTimeout, s.RequestTimeout = short, 2*short
		})
		c := dial(t, s)
		if _, err := io.WriteString(c, "GET /v1/threads/t/checkpoint HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, c, bufio.NewReader(c), 10*time.Second)
	})
}

// TestConnections_Cap: with MaxConns open connections, the next one is not
// served until one of them closes.
func TestConnections_Cap(t *testing.T) {
	s := openServer(t, &apitest.Store{}, func(s *api.Server) { s.MaxConns = 2 })
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c := dial(t, s)
		if resp := get(t, c, bufio.NewReader(c), "/healthz"); resp.StatusCode != 200 {
			t.Fatalf("Code=%d", resp.StatusCode)
		}
		held = append(held, c)
	}
	third := dial(t, s) // the kernel accepts it; the server does not yet
	if _, err := io.WriteString(third, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(third)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := r.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection over a cap of 2 was answered (err %v)", err)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the third connection was not served once one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("Code=%d", resp.StatusCode)
	}
}

// TestMalformedRequestLine: a request net/http cannot parse, such as a path
// with a bad %-escape, was answered by net/http itself in text/plain. It gets
// the API's JSON error body too.
func TestMalformedRequestLine(t *testing.T) {
	s := openServer(t, &apitest.Store{}, func(*api.Server) {})
	for _, tt := range []struct {
		name, request string
		status        int
		code          string
	}{
		{"BadEscapeInPath", "GET /v1/threads/%zz/checkpoint HTTP/1.1\r\nHost: x\r\n\r\n", 400, saver.EINVALID},
		{"TruncatedEscape", "GET /v1/threads/a%2/checkpoint HTTP/1.1\r\nHost: x\r\n\r\n", 400, saver.EINVALID},
		{"NoHost", "GET /healthz HTTP/1.1\r\n\r\n", 400, saver.EINVALID},
		{"BadHeader", "GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", 400, saver.EINVALID},
		{"HeadersTooLarge", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 431, saver.ETOOLARGE},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, s)
			go io.WriteString(c, tt.request) // a large request may be refused before it is all sent
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("Code=%d, want %d", resp.StatusCode, tt.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Code != tt.code || body.Error.Message == "" {
				t.Fatalf("error %+v, want code %q and a message", body.Error, tt.code)
			}
		})
	}
}

// TestConnections_PerClient: one client holding every connection (re-used
// within the idle timeout) made every other client's requests time out, at
// a cap of 1,024 as at 64. An address past MaxConnsPerClient has its next
// connections refused as soon as they are accepted, and another address is
// served.
func TestConnections_PerClient(t *testing.T) {
	s := openServer(t, &apitest.Store{}, func(s *api.Server) { s.MaxConns, s.MaxConnsPerClient = 8, 4 })
	from := func(ip string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// One client opens as many connections as the server has, keeping
	// each one it is served on.
	var refused []string
	for i := range 8 {
		c := from("127.0.0.1")
		r := bufio.NewReader(c)
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") // a refused connection may be closed already
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(r, nil)
		switch {
		case i < 4 && (err != nil || resp.StatusCode != 200):
			t.Fatalf("connection %d of the first client: %v %v, want 200", i+1, resp, err)
		case i < 4:
			io.Copy(io.Discard, resp.Body)
		case errors.Is(err, os.ErrDeadlineExceeded):
			t.Errorf("connection %d of the first client, over its cap of 4, is neither served nor refused", i+1)
		case err == nil && resp.StatusCode != http.StatusServiceUnavailable:
			t.Errorf("connection %d of the first client, over its cap of 4: %d, want 503 or a close", i+1, resp.StatusCode)
		case err == nil && resp.Header.Get("Retry-After") == "":
			t.Errorf("connection %d of the first client: 503 without Retry-After", i+1)
		case err == nil:
			refused = append(refused, resp.Status)
		default:
			refused = append(refused, err.Error())
		}
	}
	t.Logf("the first client's connections past its cap: %q", refused)
	c := from("127.0.0.2")
	start := time.Now()
	if resp := get(t, c, bufio.NewReader(c), "/healthz"); resp.StatusCode != 200 {
		t.Fatalf("another client: %d, want 200", resp.StatusCode)
	}
	t.Logf("another client served in %s", time.Since(start))
}
