// Package damage is test support: it damages a store's files on disk, to
// see what a store does when what it reads back is not what it wrote.
package damage

import (
	"os"
	"path/filepath"
	"testing"
)

// PebbleTables flips a byte every 4 KiB through the first half of each
// table (*.sst) of the Pebble store in dir: its data blocks, whose
// checksums Pebble checks as it reads them. The store must be closed.
func PebbleTables(tb testing.TB, dir string) {
	tb.Helper()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		tb.Fatal("the store has no table to damage")
	}
	for _, name := range tables {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for i := 0; i+64 < len(b)/2; i += 4096 {
			b[i+64] ^= 0xff
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}
