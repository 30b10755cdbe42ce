package lincheck

import (
	"net"
	"sync"
)

// Mode is what a Proxy does with the traffic.
type Mode int

const (
	// Pass forwards every byte both ways.
	Pass Mode = iota
	// Down is the service stopped: open connections are reset and new
	// ones are reset at once.
	Down
	// Frozen is the service hung (SIGSTOP): connections are accepted and
	// kept, and no byte goes either way until the mode changes; then what
	// was held is delivered, late, as after a SIGCONT.
	Frozen
)

func (m Mode) String() string { return [...]string{"pass", "down", "frozen"}[m] }

// Proxy is a TCP proxy on loopback in front of a service (DynamoDB, S3)
// whose mode the test sets: it stops or freezes the service for the
// processes that reach it through the proxy, and only for them.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  Mode
	thaw  *sync.Cond // broadcast when the mode changes
	conns map[net.Conn]struct{}
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.thaw = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Set(Down)
}

// Set changes the mode.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == Down {
		for c := range p.conns {
			reset(c)
		}
		clear(p.conns)
	}
	p.thaw.Broadcast()
}

// reset closes c with a RST, as a stopped server's kernel answers.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// gate waits while the proxy is frozen and reports whether c may go on.
func (p *Proxy) gate(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == Frozen {
		p.thaw.Wait()
	}
	_, open := p.conns[c]
	return p.mode == Pass && open
}

func (p *Proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	p.track(c)
	if !p.gate(c) {
		reset(c)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		reset(c)
		return
	}
	p.track(up)
	go p.pipe(up, c)
	p.pipe(c, up)
}

// pipe copies from src to dst, each chunk through the gate, and resets both
// when either side ends.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer func() {
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
		reset(src)
		reset(dst)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate(src) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF too: the clients here never half-close
		}
	}
}
