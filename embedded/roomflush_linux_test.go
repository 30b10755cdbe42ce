package embedded

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver/faults/smallfs"
	"github.com/saver-dev/saver/storetest"
)

// TestRoomForFlushesTheLog puts a Pebble store where its free space is
// enough for puts but not beside what its log holds still to flush: a
// write refused for that, or the readiness probe, gets the log flushed,
// with no write to follow. Before, it stayed unflushed for good (a
// memtable flushes once full, and every put was refused), and so did the
// tombstones of the deletions a user made to free space, with the data
// they delete (TestServiceDeletesOnADiskItFilled stayed not ready on a
// loaded machine). The file system is the test's own, so that nothing
// else moves its free space.
func TestRoomForFlushesTheLog(t *testing.T) {
	smallfs.Run(t, 3*DefaultReserveBytes, func(t *testing.T, dir string) {
		s, err := Open(filepath.Join(dir, "saver.db"), WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		ref := storetest.NewRef()
		for i := range 4 {
			in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
			storetest.SetChannel(&in, "messages", fmt.Sprint(i), strings.Repeat(fmt.Sprint(i), 256<<10))
			storetest.MustPutCheckpoint(t, s, in)
		}
		e := s.db.(*pebbleEngine)
		free, err := freeBytes(dir)
		if err != nil {
			t.Fatal(err)
		}
		pending := e.wal.bytes(e.db)
		if pending < 1<<20 || pending > pebbleMemTable {
			t.Fatalf("%d bytes in the log to flush, want a megabyte, under a memtable", pending)
		}
		// Room for puts, but not beside the log.
		e.reserve = free - pending/2
		if err := e.HasRoom(); err == nil {
			t.Fatal("HasRoom with the log counted: no error")
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			left := e.wal.bytes(e.db)
			if left < pending/4 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d bytes of the log to flush 10 s after it was too large to leave room, want it flushed", left)
			}
			e.HasRoom()
			time.Sleep(20 * time.Millisecond)
		}
	})
}
