package smallfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv names the test that a test binary started by Run is to run on
// the small file system.
const childEnv = "SAVER_SMALLFS_TEST"

// Run runs fn with a directory on a file system of its own of
// size bytes, which a test can fill up to see what a full disk does. The
// file system is a tmpfs mounted in a private mount namespace: the test
// binary runs the calling test again, alone, in a new namespace (as root,
// or in a user namespace of its own otherwise), where the mount is made,
// and the caller passes or fails with it. Nothing is mounted outside that
// process, and its end removes the mount whatever happens to it.
//
// The calling test must be a top-level test or subtest that does nothing
// before Run that it needs to do only once.
func Run(t *testing.T, size int64, fn func(t *testing.T, dir string)) {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		dir := t.TempDir()
		opts := fmt.Sprintf("size=%d,mode=0700", size)
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			t.Fatalf("mount a tmpfs of %d bytes on %s: %v", size, dir, err)
		}
		t.Cleanup(func() {
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dir, err)
			}
		})
		fn(t, dir)
		return
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	args := []string{"-test.run=" + strings.Join(parts, "/"), "-test.v", "-test.count=1"}
	if d, ok := t.Deadline(); ok {
		// The child's deadline comes first, so that a child that hangs
		// prints its goroutines into out before the parent's alarm ends
		// both without them.
		args = append(args, "-test.timeout="+(time.Until(d)*9/10).Round(time.Second).String())
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		// Root in a user namespace of its own may mount a tmpfs there.
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		}
	}
	out, err := cmd.CombinedOutput()
	t.Logf("%s on a %d-byte tmpfs, in a process of its own:\n%s", t.Name(), size, out)
	if err != nil {
		t.Fatalf("%s failed in its own process, on the small file system: %v (its output is above)", t.Name(), err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" (") {
		t.Fatalf("%s did not run on the small file system", t.Name())
	}
}

// Fill writes a file in dir until the file system has no space left, and
// returns a function that removes it again.
func Fill(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i)
	}
	for len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			buf = buf[:len(buf)/2] // fill the last partial block too
		}
	}
	f.Close()
	return func() {
		t.Helper()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// FillTo fills the file system as Fill does, then gives back leave bytes
// of it, so that about leave bytes are free; free removes the filler.
func FillTo(t *testing.T, dir string, leave int64) (free func()) {
	t.Helper()
	free = Fill(t, dir)
	path := filepath.Join(dir, "filler")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, max(fi.Size()-leave, 0)); err != nil {
		t.Fatal(err)
	}
	return free
}
