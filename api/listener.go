package api

import (
	"bytes"
	"net"
	"net/http"
	"strconv"

	"golang.org/x/net/netutil"

	"github.com/saver-dev/saver"
)

// listen wraps ln with the connection cap and, for plain HTTP, the rewriting
// of net/http's own error answers (plainErrorConn).
func (s *Server) listen(ln net.Listener, tls bool) net.Listener {
	if s.MaxConns > 0 {
		// Past the cap, connections wait in the kernel's backlog until one
		// closes: idle ones do after IdleTimeout.
		ln = netutil.LimitListener(ln, s.MaxConns)
	}
	if !tls {
		ln = plainErrorListener{ln}
	}
	return ln
}

type plainErrorListener struct{ net.Listener }

func (l plainErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return plainErrorConn{c}, nil
}

// plainErrorConn turns the text/plain answer net/http writes, without any
// handler, to a request it cannot parse (a bad %-escape in the path, a
// malformed request line or header, headers over the limit) into the API's
// JSON error body. Such an answer is one Write of a fixed form, status line,
// then exactly net/http's errorHeaders; nothing else the server writes has
// that form, since every other response comes from a handler.
//
// Under TLS net/http must see its *tls.Conn, so such answers stay plain text.
type plainErrorConn struct{ net.Conn }

// serverErrorHeaders is what net/http writes after the status line of its
// own error answers (net/http/server.go, errorHeaders).
var serverErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

func (c plainErrorConn) Write(p []byte) (int, error) {
	if b, ok := rewriteServerError(p); ok {
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

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
