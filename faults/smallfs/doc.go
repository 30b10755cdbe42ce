// Package smallfs is test support: a small file system of a test's own, to
// fill up and see what a full disk does (Run, Fill). It mounts a tmpfs in a
// private mount namespace, so it works on Linux only, as root or where user
// namespaces are allowed; tests that use it are Linux-only files.
package smallfs
