package embedded

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
)

// Disk full. A write that fails for want of space (ENOSPC, or EDQUOT when
// a quota runs out) rolls its transaction back, so nothing of it is
// stored, and is answered EUNAVAILABLE: retrying is right once space is
// freed. The store remembers it (Store.full), so that Ping reports the
// store not ready instead of answering for reads only, until the engine
// finds room for puts again (HasRoom): after a write that commits, or in
// Ping's probe, as a store that a load balancer has taken out of rotation
// for being full gets no writes to find out with. A write that commits is
// not enough: deletions commit into the reserve that puts are refused
// (roomFor).

// spaceProbeBytes is what the probe writes next to the file: space for a
// put of some size, not only for one page.
const spaceProbeBytes = 1 << 20

// noSpace reports whether err is the file system's "no space left".
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// noteWrite records the outcome of a write transaction.
func (s *Store) noteWrite(err error) {
	switch {
	case err == nil:
		if s.full.Load() && s.db.HasRoom() == nil {
			s.roomIsBack()
		}
	case noSpace(err):
		if !s.full.Swap(true) {
			s.Logger.Error("disk full: writes fail until space is freed", "path", s.path, "error", err)
		}
	}
}

// roomIsBack records that the engine found room for puts again.
func (s *Store) roomIsBack() {
	if s.full.Swap(false) {
		s.Logger.Info("disk space is back", "path", s.path)
	}
}

// HasRoom for bbolt writes and syncs spaceProbeBytes to a temporary file in
// the store's directory, and removes it: the file system has room again
// when that succeeds. The bytes are random, so that no compressing file
// system stores them in less.
func (e *boltEngine) HasRoom() error {
	f, err := os.CreateTemp(filepath.Dir(e.db.Path()), ".saver-space-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, spaceProbeBytes)
	rand.NewChaCha8([32]byte{}).Read(buf)
	if _, err := f.Write(buf); err != nil {
		return err
	}
	return f.Sync()
}

// HasRoom for Pebble: writes need the reserve free, nothing more; the
// bar a put must pass, not the lower one of deletions.
func (e *pebbleEngine) HasRoom() error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return errClosed
	}
	return e.roomFor(0, false)
}
