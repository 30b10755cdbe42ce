package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/saver-dev/saver/embedded"
)

const backupUsage = `usage: saver backup [flags] DIR

Writes a consistent copy of the embedded store into DIR, which must not
exist or be empty: from the running service (-url; the service takes a
Pebble checkpoint and streams it, writers carry on), or, with -db, from the
store at PATH when no process serves it. DIR is then a store: saver restore
puts it in place, or saver serve -db DIR opens it as it is (a bbolt store's
copy is the file DIR/saver.db).

Flags:
`

const restoreUsage = `usage: saver restore -db PATH [-force] DIR

Puts the backup in DIR (a folder saver backup wrote) in place as the store
at PATH, with the service stopped: a copy of DIR is checked (it opens, and
every key and value reads back, which checks Pebble's checksums) before it
goes to PATH. DIR is left as it is. A store already at PATH is refused
unless -force, which moves it aside to PATH.before-restore-TIME.

Flags:
`

// backup is `saver backup`.
func backup(ctx context.Context, in invocation) error {
	fset := flag.NewFlagSet("saver backup", flag.ContinueOnError)
	fset.SetOutput(in.stderr)
	fset.Usage = func() { fmt.Fprint(in.stderr, backupUsage); fset.PrintDefaults() }
	url := in.getenv("SAVER_URL")
	if url == "" {
		url = "http://127.0.0.1:7878"
	}
	fset.StringVar(&url, "url", url, "the running service's base URL (env SAVER_URL)")
	keyFile := fset.String("operator-key-file", in.getenv("SAVER_OPERATOR_KEY_FILE"), "file holding the service's operator key (env SAVER_OPERATOR_KEY_FILE)")
	db := fset.String("db", "", "back up the store at this path, which no process may hold, instead of asking the service")
	args, err := parseInterspersed(fset, in.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		fset.Usage()
		return errors.New("backup: one DIR is required")
	}
	dir := filepath.Clean(args[0])
	if err := emptyTarget(dir); err != nil {
		return err
	}
	start := time.Now()
	var body io.ReadCloser
	if *db != "" {
		body, err = backupLocal(ctx, *db, in.stderr)
	} else {
		body, err = backupRemote(ctx, strings.TrimRight(url, "/"), *keyFile)
	}
	if err != nil {
		return err
	}
	defer body.Close()
	m, err := receiveBackup(body, dir)
	if err != nil {
		return err
	}
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	_, err = fmt.Fprintf(in.stdout, "backed up the %s store into %s: %d files, %d bytes, in %s\n",
		m.Engine, dir, len(m.Files), n, time.Since(start).Round(time.Millisecond))
	return err
}

// emptyTarget refuses a DIR that exists and is not an empty directory: a
// backup never mixes with other files or overwrites an earlier one.
func emptyTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("backup: %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("backup: %s is not empty: a backup goes into a new or empty directory", dir)
	}
	return nil
}

// backupRemote asks the service at url for a backup and returns the stream.
func backupRemote(ctx context.Context, url, keyFile string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/admin/backup", nil)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if keyFile != "" {
		key, err := (&Config{OperatorKeyFile: keyFile}).LoadOperatorKey(os.ReadFile)
		if err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Accept", "application/x-tar, application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return nil, fmt.Errorf("backup: %s (%d %s)", e.Error.Message, resp.StatusCode, e.Error.Code)
	}
	return nil, fmt.Errorf("backup: POST %s/admin/backup: %d", url, resp.StatusCode)
}

// backupLocal opens the store at path, which no process may hold, and
// returns its backup stream; the store closes when the stream does.
func backupLocal(ctx context.Context, path string, logOut io.Writer) (io.ReadCloser, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("backup: no store at %s: %w", path, err) // Open would make one
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := embedded.Open(path, embedded.WithLogger(logger), embedded.WithTimeout(time.Second))
	if errors.Is(err, embedded.ErrLocked) {
		return nil, fmt.Errorf("backup: %w; a running service holds the store: back it up through the service (-url)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	r, w := io.Pipe()
	go func() {
		err := st.Backup(ctx, w)
		w.CloseWithError(errors.Join(err, st.Close()))
	}()
	return r, nil
}

// receiveBackup reads the stream into a temporary folder beside dir, then
// renames it to dir: dir holds a whole backup or nothing.
func receiveBackup(r io.Reader, dir string) (*embedded.BackupManifest, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".partial-")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	m, err := embedded.ReadBackup(r, tmp)
	if err == nil {
		err = os.Remove(dir) // empty, or absent (emptyTarget)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err == nil {
		err = syncDir(parent)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("backup: %w", err)
	}
	return m, nil
}

// restore is `saver restore`.
func restore(ctx context.Context, in invocation) error {
	fset := flag.NewFlagSet("saver restore", flag.ContinueOnError)
	fset.SetOutput(in.stderr)
	fset.Usage = func() { fmt.Fprint(in.stderr, restoreUsage); fset.PrintDefaults() }
	db := fset.String("db", in.getenv("SAVER_DB"), "where the store goes: the path the service serves (env SAVER_DB)")
	force := fset.Bool("force", false, "move a store already at -db aside (to PATH.before-restore-TIME) rather than refuse")
	args, err := parseInterspersed(fset, in.args)
	if err != nil {
		return err
	}
	if len(args) != 1 || *db == "" {
		fset.Usage()
		return errors.New("restore: -db PATH and one DIR are required")
	}
	path, src := filepath.Clean(*db), filepath.Clean(args[0])
	// A bbolt store's backup holds its file.
	if _, err := os.Stat(filepath.Join(src, embedded.BoltBackupName)); err == nil {
		src = filepath.Join(src, embedded.BoltBackupName)
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	_, err = os.Lstat(path)
	exists := err == nil
	if exists && !*force {
		return fmt.Errorf("restore: %s already holds a store; stop the service and use -force to move it aside, or restore to a new path", path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(in.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(path)+".restore-")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(tmp)
	copyPath := filepath.Join(tmp, "store")
	n, err := verifiedCopy(ctx, src, copyPath, logger)
	if err != nil {
		return err
	}
	aside := ""
	if exists {
		if aside, err = moveAside(path, logger); err != nil {
			return err
		}
	}
	if err := os.Rename(copyPath, path); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := syncDir(parent); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(in.stdout, "restored %s into %s: %d keys read back\n", args[0], path, n)
	if aside != "" {
		fmt.Fprintf(in.stdout, "the store that was at %s is at %s\n", path, aside)
	}
	return nil
}

// verifiedCopy copies the backup at src to dst and reads the copy back
// whole, returning the keys it read.
func verifiedCopy(ctx context.Context, src, dst string, logger *slog.Logger) (int, error) {
	if err := copyStore(src, dst); err != nil {
		return 0, fmt.Errorf("restore: copy %s: %w", src, err)
	}
	st, err := embedded.Open(dst, embedded.WithLogger(logger))
	if err != nil {
		return 0, fmt.Errorf("restore: %s is not a store that opens: %w", src, err)
	}
	n, err := st.Verify(ctx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("restore: %s does not read back whole: %w", src, err)
	}
	return n, nil
}

// moveAside moves the store at path to a name of its own, and returns it.
// It never moves a store a service holds; one that does not open
// (damaged: a reason to restore) is moved aside all the same.
func moveAside(path string, logger *slog.Logger) (string, error) {
	old, err := embedded.Open(path, embedded.WithLogger(logger), embedded.WithTimeout(time.Second))
	if errors.Is(err, embedded.ErrLocked) {
		return "", fmt.Errorf("restore: %w: stop the service before restoring", err)
	}
	if err == nil {
		if err := old.Close(); err != nil {
			return "", fmt.Errorf("restore: %w", err)
		}
	}
	aside := path + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("restore: move the store at %s aside: %w", path, err)
	}
	return aside, nil
}

// copyStore copies the store at src (a Pebble directory, flat, or a bbolt
// file) to dst, each file synced, so that the backup itself is never
// opened or changed.
func copyStore(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFile(src, dst)
	}
	if err := os.Mkdir(dst, 0o750); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file: a backup holds files only", filepath.Join(src, e.Name()))
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return syncDir(dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes the entries of dir durable (a rename into it).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
