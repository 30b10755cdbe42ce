package api

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/saver-dev/saver"
)

// listen wraps ln with the connection caps and, for plain HTTP, the
// rewriting of net/http's own error answers (see conn).
func (s *Server) listen(ln net.Listener, tls bool) net.Listener {
	l := &listener{Listener: ln, rewrite: !tls, done: make(chan struct{})}
	if s.MaxConns > 0 {
		l.slots = make(chan struct{}, s.MaxConns)
	}
	if s.MaxConnsPerClient > 0 {
		l.clients = newShares(int64(s.MaxConnsPerClient))
	}
	return l
}

// listener caps open connections: past the cap, Accept waits for one to
// close, and further connections wait in the kernel's backlog (idle ones
// close after IdleTimeout). It does what netutil.LimitListener does, but its
// connections keep CloseWrite, with which net/http half-closes a connection
// so that a client still sending a body over the limit reads its 413 rather
// than a reset.
//
// It also caps the connections of each address (clients): with the global
// cap alone, one client holding every connection open (re-used within the
// idle timeout) left every other client waiting in the backlog until its
// requests timed out. A connection past its address's cap is refused as
// soon as it is accepted, never waited for: waiting would stop Accept for
// every address behind it.
type listener struct {
	net.Listener
	slots     chan struct{} // nil: no cap
	clients   *shares       // connections per address; nil: no cap
	rewrite   bool
	done      chan struct{} // closed by Close, to end a waiting Accept
	closeOnce sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			case <-l.done:
				return nil, net.ErrClosed
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.release()
			return nil, err
		}
		client := remoteHost(c.RemoteAddr().String())
		if l.clients != nil && !l.clients.tryAcquire(client, 1) {
			l.refuse(c)
			l.release()
			continue
		}
		return &conn{Conn: c, l: l, client: client}, nil
	}
}

// refuse closes a connection over its address's cap. On plain HTTP it first
// writes a 503, which a client reads if it had not sent its request yet
// (closing with a request unread resets the connection, as a refusal should
// anyway). The write goes to an empty send buffer, so it does not wait; the
// deadline makes sure of that, since the loop that accepts every client's
// connections is waiting on it.
func (l *listener) refuse(c net.Conn) {
	if l.rewrite {
		c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		c.Write(refusal)
	}
	c.Close()
}

const refuseWriteTimeout = 10 * time.Millisecond

var refusal = rawErrorResponse(http.StatusServiceUnavailable, errorDetail{
	Code:    saver.EUNAVAILABLE,
	Message: "This address holds its limit of open connections; reuse one, or retry once one closes.",
}, "Retry-After: "+retryAfterSeconds)

func (l *listener) release() {
	if l.slots != nil {
		<-l.slots
	}
}

func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// conn frees its listener's slot when closed. On plain HTTP it also turns
// the text/plain answer net/http writes, without any handler, to a request
// it cannot parse (a bad %-escape in the path, a malformed request line or
// header, headers over the limit) into the API's JSON error body. Such an
// answer is one Write of a fixed form, a status line then exactly net/http's
// errorHeaders; nothing else the server writes has that form, since every
// other answer comes from a handler. Under TLS net/http must see its
// *tls.Conn, so there such answers stay plain text.
type conn struct {
	net.Conn
	l         *listener
	client    string // its remote address's host
	closeOnce sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		if c.l.clients != nil {
			c.l.clients.release(c.client, 1)
		}
		c.l.release()
	})
	return err
}

// CloseWrite half-closes the connection when the one underneath can.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Write(p []byte) (int, error) {
	if c.l.rewrite {
		if b, ok := rewriteServerError(p); ok {
			if _, err := c.Conn.Write(b); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// serverErrorHeaders is what net/http writes after the status line of its
// own error answers (net/http/server.go, errorHeaders).
var serverErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

// rewriteServerError returns the JSON form of one of net/http's own error
// answers, or false when p is not one.
func rewriteServerError(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) {
		return nil, false
	}
	end := bytes.Index(p, serverErrorHeaders)
	if end < 0 || bytes.IndexByte(p[:end], '\n') >= 0 || end < len(proto)+3 {
		return nil, false
	}
	status, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	// The body repeats the status line, with net/http's detail after a
	// colon when it gives one ("400 Bad Request: missing required Host
	// header"); that detail is safe to pass on.
	body := string(p[end+len(serverErrorHeaders):])
	detail := errorDetail{Code: saver.EINVALID, Message: "The request is not valid HTTP: a bad %-escape in the path, or a malformed request line or header."}
	switch {
	case status == http.StatusRequestHeaderFieldsTooLarge:
		detail = errorDetail{Code: saver.ETOOLARGE, Message: "Request headers are over the limit."}
	case status == http.StatusNotImplemented:
		detail.Message = "The request's transfer encoding is not supported."
	case bytes.Contains([]byte(body), []byte(": ")):
		_, text, _ := bytes.Cut([]byte(body), []byte(": "))
		detail.Message = "The request is not valid HTTP: " + string(text) + "."
	}
	return rawErrorResponse(status, detail), true
}
