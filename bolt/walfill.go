package bolt

import (
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walFillFS writes zeros through each new write-ahead log before Pebble
// writes its first record, as PostgreSQL does with its WAL segments. A
// commit's fdatasync then overwrites blocks the file already has, within
// the size it already has, and writes no metadata: an append that grows the
// file made each sync write the inode too (106 us a sync overwriting a
// recycled log against 183-231 us appending to a fresh one, measured on
// ext4). Pebble's own preallocation keeps the file's size
// (FALLOC_FL_KEEP_SIZE), so its appends still change it, and a recycled log
// is only ever as long as its last use. Pebble reads the zeros past a log's
// last record as its end, exactly as it reads a preallocated or recycled
// log's tail.
type walFillFS struct {
	vfs.FS
	size int64 // bytes of zeros in a new log: Pebble's preallocation size
}

// walFill is what one WriteAt writes of a new log's zeros.
var walFill = make([]byte, 256<<10)

func (f walFillFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, category)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	if err := fillZeros(file, f.size); err != nil {
		// Not filled (a full disk, say): the log is written as Pebble
		// writes it, appending. Whatever the fill wrote past what Pebble
		// writes reads as zeros, its end, so it is harmless, but the file
		// is emptied so that a disk short of space gets its bytes back.
		if ferr := f.FS.Remove(name); ferr == nil {
			file.Close()
			return f.FS.Create(name, category)
		}
	}
	return file, nil
}

// fillZeros writes n bytes of zeros from the start of file and syncs them
// with the file's size. The file's offset stays at 0 (WriteAt), where
// Pebble's first write goes.
func fillZeros(file vfs.File, n int64) error {
	for off := int64(0); off < n; {
		chunk := walFill[:min(int64(len(walFill)), n-off)]
		if _, err := file.WriteAt(chunk, off); err != nil {
			return err
		}
		off += int64(len(chunk))
	}
	return file.Sync()
}
