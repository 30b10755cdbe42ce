package api

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestListenerKeepsCloseWrite: net/http half-closes a connection (CloseWrite)
// after refusing a body over the limit, so that the client, still sending,
// reads the 413 instead of a reset. A wrapped connection that hid CloseWrite
// (as netutil.LimitListener's do) would lose that.
func TestListenerKeepsCloseWrite(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{MaxConns: 1}
	ln := s.listen(raw, false)
	defer ln.Close()
	client, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("accepted connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("client read %v after CloseWrite, want EOF", err)
	}
	if _, err := client.Write([]byte("still sending")); err != nil {
		t.Fatalf("the client can no longer send after a half-close: %v", err)
	}
}
