package embedded_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// helperEnv, when set, turns this test binary into the writer process of
// TestDurability; its value is the store's path.
const helperEnv = "SAVER_BOLT_DURABILITY_WRITER"

var durableRef = saver.CheckpointRef{Tenant: "durability", ThreadID: "thread"}

// durablePut is what writer w puts as its i-th checkpoint.
func durablePut(w, i int) saver.PutCheckpoint {
	ref := storetest.InNS(durableRef, fmt.Sprintf("writer:%d", w))
	in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
	storetest.SetChannel(&in, "ch", strconv.Itoa(i), fmt.Sprintf("value %d/%d", w, i))
	return in
}

func durableWrite(w, i int) saver.Write {
	return storetest.NewWrite("task", 0, "ch", fmt.Sprintf("write %d/%d", w, i))
}

// TestDurabilityWriter is the child process of TestDurability: writers put
// checkpoints and writes concurrently, forever, and print "ack w i" once
// both calls have returned.
func TestDurabilityWriter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("runs only as the child process of TestDurability")
	}
	s, err := embedded.Open(path, embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				in := durablePut(w, i)
				if err := s.PutCheckpoint(t.Context(), in); err != nil {
					fmt.Println("put:", err)
					os.Exit(2)
				}
				if err := s.PutWrites(t.Context(), saver.PutWrites{CheckpointRef: in.CheckpointRef, Writes: []saver.Write{durableWrite(w, i)}}); err != nil {
					fmt.Println("put writes:", err)
					os.Exit(2)
				}
				mu.Lock()
				// Unbuffered: once Println returns, the parent can read it.
				_, err := fmt.Fprintf(os.Stdout, "ack %d %d\n", w, i)
				mu.Unlock()
				if err != nil {
					os.Exit(2)
				}
			}
		})
	}
	wg.Wait()
}

// TestDurability kills a writing process with SIGKILL right after it
// acknowledged writes, reopens the file and reads every acknowledged write
// back.
func TestDurability(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("parent test")
	}
	path := filepath.Join(t.TempDir(), "data", "saver.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDurabilityWriter$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})

	const enough = 200
	acked := map[[2]int]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var w, i int
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &w, &i); err != nil {
			t.Fatalf("writer said %q", sc.Text())
		}
		acked[[2]int{w, i}] = true
		if len(acked) == enough && !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killed = true
			// Keep reading: acks printed before the kill landed count too.
		}
	}
	if !killed {
		t.Fatalf("writer stopped after %d acks", len(acked))
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("writer exit = %v, want killed", err)
	}

	s := MustOpen(t, path)
	for k := range acked {
		w, i := k[0], k[1]
		in := durablePut(w, i)
		storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, in.CheckpointRef), storetest.WantTuple(in, durableWrite(w, i)))
	}
	// The file is whole: it lists, and every listed checkpoint reads.
	all := storetest.MustListThread(t, s, durableRef.Tenant, durableRef.ThreadID)
	if len(all) < len(acked) {
		t.Fatalf("listed %d checkpoints, fewer than the %d acknowledged", len(all), len(acked))
	}
	// The store takes writes again.
	in := durablePut(99, 0)
	storetest.MustPutCheckpoint(t, s, in)
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, in.CheckpointRef), storetest.WantTuple(in))
}
