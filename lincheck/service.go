package lincheck

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build compiles the service (./cmd/saver of the module holding dir) into
// out with the given build tags, and returns the binary's path.
func Build(ctx context.Context, moduleDir, out string, tags ...string) (string, error) {
	bin := filepath.Join(out, "saver")
	if len(tags) > 0 {
		bin += "-" + strings.Join(tags, "-")
	}
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), append(args, "./cmd/saver")...)
	cmd.Dir = moduleDir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %v: %v\n%s", tags, err, b)
	}
	return bin, nil
}

// startTimeout bounds a start, generous for small busy machines.
const startTimeout = 60 * time.Second

// Service is a saver process the test owns: started, killed with SIGKILL and
// started again on the same port and data.
type Service struct {
	Bin  string
	Dir  string   // its working folder: log, address files
	Args []string // after "serve" and the address flags
	Env  []string // over the test's own

	cmd    *exec.Cmd
	done   chan struct{}
	starts int

	mu   sync.Mutex // addr is read by the clients while the test restarts
	addr string
}

// Start starts the service (on its previous port after the first start) and
// waits until it answers /readyz.
func (s *Service) Start(ctx context.Context) error {
	s.starts++
	addrFile := filepath.Join(s.Dir, fmt.Sprintf("addr-%d", s.starts))
	listen := "127.0.0.1:0"
	if addr := s.Addr(); addr != "" {
		listen = addr
	}
	log, err := os.OpenFile(filepath.Join(s.Dir, "service.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "--- start %d ---\n", s.starts)
	cmd := exec.Command(s.Bin, append([]string{"serve", "-addr", listen, "-addr-file", addrFile}, s.Args...)...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)

	deadline := time.Now().Add(startTimeout)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && strings.Contains(string(b), ":") {
			s.mu.Lock()
			s.addr = strings.TrimSpace(string(b))
			s.mu.Unlock()
			if resp, err := http.Get(s.URL() + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("service exited at start (see %s)", filepath.Join(s.Dir, "service.log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service not ready after %s (see %s)", startTimeout, filepath.Join(s.Dir, "service.log"))
		}
	}
}

// URL is the service's base URL; it stays the same across restarts.
func (s *Service) URL() string { return "http://" + s.Addr() }

// Addr is the host:port the service listens on, "" before its first start.
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Kill sends SIGKILL and waits for the process to end.
func (s *Service) Kill() error {
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-s.done
	s.cmd = nil
	return nil
}

// Signal sends sig to the running process (SIGSTOP, SIGCONT).
func (s *Service) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }

// Restart kills the service and starts it again.
func (s *Service) Restart(ctx context.Context) error {
	if err := s.Kill(); err != nil {
		return err
	}
	return s.Start(ctx)
}
