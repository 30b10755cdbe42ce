package embedded

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walFill is the file system Pebble sees: the same as the one below it,
// except that a write-ahead log file is created already written, with
// zeros, to the length Pebble preallocates for it. A commit's fdatasync on
// a file it appends to also writes the file's new size (and turns
// preallocated extents into written ones), which made a put's sync about
// 100 µs slower (on ext4, 200-260 µs against 110-160) until Pebble had
// flushed enough memtables to recycle its logs, a few times 4 MB of writes
// after every start. Writing over zeros already on disk, as over a recycled
// log, leaves the metadata as it is.
//
// Replay reads a log up to its first zeroed chunk, which Pebble takes for
// the end of what was written (the same as for a preallocated file), so a
// crash leaves nothing for it to misread.
//
// Only the store's own logs are filled: a backup's copy of a log (Pebble's
// checkpoint) is made in another directory, and is as long as what it holds.
type walFill struct {
	vfs.FS
	dir  string // the store's directory
	size int64  // bytes of zeros a new log starts with
}

// fillChunk is what one write of zeros puts on disk.
const fillChunk = 256 << 10

var zeros [fillChunk]byte

func (w walFill) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, category)
	if err != nil || w.size <= 0 || !strings.HasSuffix(name, ".log") || filepath.Dir(name) != w.dir {
		return f, err
	}
	if err := fill(f, w.size); err != nil {
		// Out of space, or another write error: the log is made as Pebble
		// would make it, empty, and the disk checks of the commits that
		// follow say what they say today.
		f.Close()
		if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
			return nil, err
		}
		return w.FS.Create(name, category)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	// Open it again at offset 0, as Pebble opens a recycled log.
	return w.FS.ReuseForWrite(name, name, category)
}

// fill writes size bytes of zeros to f and syncs them.
func fill(f vfs.File, size int64) error {
	for left := size; left > 0; {
		n := min(left, fillChunk)
		if _, err := f.Write(zeros[:n]); err != nil {
			return err
		}
		left -= n
	}
	return f.Sync()
}
