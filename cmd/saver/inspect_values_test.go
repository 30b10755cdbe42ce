package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/saver-dev/saver/storetest"
)

// TestInspectValues: checkpoint -values prints the values and writes the
// service decoded, messages as a conversation, an unreadable value by type
// and size, and stored text with its terminal control characters escaped.
func TestInspectValues(t *testing.T) {
	url := inspectFixture(t)
	post := func(path string, body any) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	human := storetest.MessageValue(t, "human", "h1", "<script>alert(1)</script>\x1b]0;pwned\x07")
	post("/v1/threads/chat/checkpoints", map[string]any{
		"checkpoint_id":    "m1",
		"checkpoint":       map[string]any{"type": "msgpack", "data": []byte{0x80}},
		"metadata":         map[string]any{"source": "loop", "step": 0},
		"channel_versions": map[string]string{"messages": "1", "secret": "1", "n": "1"},
		"blobs": []any{
			map[string]any{"channel": "messages", "version": "1", "value": map[string]any{"type": human.Type, "data": human.Data}},
			map[string]any{"channel": "secret", "version": "1", "value": map[string]any{"type": "msgpack+aes", "data": make([]byte, 120)}},
			map[string]any{"channel": "n", "version": "1", "value": map[string]any{"type": "msgpack", "data": []byte{0x2a}}},
		},
	})
	ai := storetest.MessageValue(t, "ai", "a1", "hello")
	post("/v1/threads/chat/writes", map[string]any{"checkpoint_id": "m1", "writes": []any{
		map[string]any{"task_id": "t1", "task_path": "~__pregel_pull, agent", "idx": 0, "channel": "messages",
			"value": map[string]any{"type": ai.Type, "data": ai.Data}}}})

	out, err := inspect(t, url, "checkpoint", "chat", "-values")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"values:\n",
		"  messages: 1 messages\n    human: <script>alert(1)</script>\\x1b]0;pwned\\a\n",
		"  n = 42\n",
		"  secret = <msgpack+aes, 120 bytes>\n",
		"writes:\n  t1 → messages: 1 messages\n    ai: hello\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("a control character reached the terminal:\n%q", out)
	}
	// Without -values: sizes only, as before.
	if out, err := inspect(t, url, "checkpoint", "chat"); err != nil || strings.Contains(out, "values:") {
		t.Errorf("without -values: %v\n%s", err, out)
	}
	// -json carries the decoded values too.
	out, err = inspect(t, url, "-json", "-values", "checkpoint", "chat")
	var v struct {
		Shown struct {
			Values []struct{ Channel, Value string }
		}
	}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || len(v.Shown.Values) != 3 {
		t.Fatalf("json: %v\n%s", err, out)
	}
}
