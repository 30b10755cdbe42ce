package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// checkFile decides how Open opens path: it reports create when there is no
// file, so that Open makes a new store, and otherwise verifies the file that
// is there (verifyFile) before bbolt maps it. An existing file is never
// turned into a new store: bbolt would initialise an empty file in place,
// so an empty file is refused, as a store file is never empty once Open
// has created it.
func (s *Store) checkFile(path string) (create bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("embedded: open %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return false, fmt.Errorf("embedded: open %s: %w: it is not a regular file (%s)", path, ErrNotStore, fi.Mode().Type())
	case fi.Size() == 0:
		return false, fmt.Errorf("embedded: open %s: %w: the file is empty (0 bytes). A store file is never empty, so "+
			"this one has lost its data, or was made by something else or by a first start cut off before it "+
			"wrote anything. saver creates a store only where no file exists: restore the file from a backup, "+
			"or delete it to start with a new, empty store", path, ErrNotStore)
	}
	// Verify under bbolt's shared lock, so that no writer changes the file
	// meanwhile; a read-only open reads only the two meta pages. It is
	// closed before Open takes the exclusive lock.
	ro, roErr := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true, Timeout: s.Timeout, OpenFile: (&openFiles{}).open})
	if errors.Is(roErr, bolterrors.ErrTimeout) {
		return false, openError(path, roErr)
	}
	verr := verifyPath(path)
	if roErr == nil {
		ro.Close()
	}
	switch {
	case errors.Is(verr, ErrNotStore):
		return false, fmt.Errorf("embedded: open %s: %w. The file is left as it is: restore it from a backup, "+
			"or move it aside to start with a new, empty store", path, verr)
	case verr != nil:
		return false, fmt.Errorf("embedded: open %s: %w", path, verr)
	case roErr != nil:
		return false, openError(path, roErr)
	}
	return false, nil
}

// ErrLocked is in the chain of the error Open returns when another process
// holds the store (a service serving it) for longer than Store.Timeout.
var ErrLocked = errors.New("the store is locked by another process")

// openError words an error of bbolt.Open.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("embedded: open %s: %w: %w", path, ErrLocked, err)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("embedded: open %s: another process created the file meanwhile; start again to open it: %w", path, err)
	}
	return fmt.Errorf("embedded: open %s: %w", path, err)
}

// openFiles is bbolt's OpenFile: it creates the file only when create is
// set, and then exclusively, so that a file that appeared since checkFile
// looked is never initialised as a new store; without create it never
// creates one (a file removed since checkFile verified it stays removed).
type openFiles struct {
	create  bool
	created bool
}

func (o *openFiles) open(name string, flag int, perm os.FileMode) (*os.File, error) {
	flag &^= os.O_CREATE
	if o.create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(name, flag, perm)
	o.created = err == nil && o.create
	return f, err
}

// undo removes the file Open created when Open fails after all (a full
// disk, say), so that the next start creates it again rather than find an
// empty file.
func (o *openFiles) undo(path string) {
	if o.created {
		os.Remove(path)
	}
}

// syncDir makes a new file's directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
