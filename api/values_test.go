package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/storetest"
)

// TestCheckpointValues serves a checkpoint's values and writes decoded for
// display: a message as a conversation, an unreadable value by type and
// size, and a hostile value's markup escaped in the JSON, never raw.
func TestCheckpointValues(t *testing.T) {
	var asked saver.CheckpointRef
	s := MustMockServer(t, &apitest.Store{
		GetTupleFn: func(_ context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
			asked = ref
			return &saver.Tuple{
				Checkpoint: saver.Checkpoint{CheckpointRef: ref},
				Values: []saver.Blob{
					{Channel: "messages", Version: "2", Value: storetest.MessageValue(t, "human", "h1", "<script>alert(1)</script>")},
					{Channel: "secret", Version: "1", Value: saver.Typed{Type: "msgpack+aes", Data: make([]byte, 120)}},
				},
				Writes: []saver.Write{{TaskID: "k", TaskPath: "~__pregel_pull, agent", Channel: "messages",
					Value: storetest.MessageValue(t, "ai", "a1", "hello")}},
			}, nil
		},
	})
	rec := do(t, s, "GET", "/v1/threads/t/checkpoint/values?checkpoint_ns=&checkpoint_id=c1&value_bytes=100", "", nil)
	if rec.Code != 200 {
		t.Fatalf("Code=%d body %s", rec.Code, rec.Body)
	}
	if asked.ThreadID != "t" || asked.ID != "c1" {
		t.Errorf("read %+v", asked)
	}
	if strings.Contains(rec.Body.String(), "<script>") {
		t.Errorf("markup unescaped in %s", rec.Body)
	}
	var body struct {
		Values []struct {
			Channel, Value string
			Messages       []struct{ Role, Text string }
		}
		Writes []struct {
			TaskPath string `json:"task_path"`
			Value    string
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Values) != 2 || len(body.Writes) != 1 {
		t.Fatalf("body %s", rec.Body)
	}
	if m := body.Values[0].Messages; len(m) != 1 || m[0].Role != "human" || m[0].Text != "<script>alert(1)</script>" {
		t.Errorf("messages %+v", m)
	}
	if v := body.Values[1].Value; v != "<msgpack+aes, 120 bytes>" {
		t.Errorf("unreadable value rendered %q", v)
	}
	if w := body.Writes[0]; w.Value != `[AIMessage("hello")]` || w.TaskPath != "~__pregel_pull, agent" {
		t.Errorf("write %+v", w)
	}

	for _, path := range []string{
		"/v1/threads/t/checkpoint/values?value_bytes=0",
		"/v1/threads/t/checkpoint/values?value_bytes=100000000",
		"/v1/threads/t/checkpoint/values?values=true",
		"/v1/threads/t/checkpoint/values?value_bytes=x",
	} {
		rec := do(t, s, "GET", path, "", nil)
		if rec.Code != 400 {
			t.Errorf("%s: Code=%d body %s, want 400", path, rec.Code, rec.Body)
		}
	}
}
