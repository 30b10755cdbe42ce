package embedded

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/saver-dev/saver"
)

// Damage. Pebble checks the checksum of every block it reads, and a table
// damaged on disk fails the reads that reach it (and the compactions that
// do) with a corruption error. The store remembers the first one
// (Store.damage) and logs it, and Ping reports the store damaged from then
// on, so that /readyz takes it out of rotation: it is not something a
// retry mends. The reads that meet the damage fail as internal errors, the
// cause in the log.

// noteDamage remembers err when it is Pebble's corruption error, and logs
// it with attrs the first time.
func (s *Store) noteDamage(err error, attrs ...any) {
	if err == nil || !pebble.IsCorruptionError(err) {
		return
	}
	if s.damage.CompareAndSwap(nil, &err) {
		s.Logger.Error("the store is damaged: reads of the damaged part fail until it is restored from a backup",
			append([]any{"path", s.path, "error", err}, attrs...)...)
	}
}

// damaged returns EUNAVAILABLE when the store has met damage, nil otherwise.
func (s *Store) damaged() error {
	if err := s.damage.Load(); err != nil {
		return saver.Errorf(saver.EUNAVAILABLE, "The store is damaged (%v): restore it from a backup.", *err)
	}
	return nil
}
