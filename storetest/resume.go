package storetest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/resume"
	"github.com/saver-dev/saver/tree"
)

var resumeTests = []treeTest{
	{"LivePath", testResumeLivePath},
}

// MessageValue returns a list of one chat message as LangGraph's serializer
// writes it: a pydantic ext (5) holding (module, class, fields, method).
func MessageValue(tb testing.TB, role, id, text string) saver.Typed {
	tb.Helper()
	class := map[string]string{"human": "HumanMessage", "ai": "AIMessage"}[role]
	fields := map[string]any{"content": text, "type": role, "id": id, "additional_kwargs": map[string]any{}}
	inner, err := msgpack.Marshal([]any{"langchain_core.messages." + role, class, fields, "model_validate_json"})
	if err != nil {
		tb.Fatal(err)
	}
	if len(inner) > 255 {
		tb.Fatalf("message too long for ext8")
	}
	ext := append([]byte{0xc7, byte(len(inner)), 5}, inner...)
	return saver.Typed{Type: "msgpack", Data: append([]byte{0x91}, ext...)}
}

// stringValue is a msgpack string, as LangGraph writes an error's repr.
func stringValue(tb testing.TB, s string) saver.Typed {
	tb.Helper()
	b, err := msgpack.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	return saver.Typed{Type: "msgpack", Data: b}
}

// testResumeLivePath stores a thread as LangGraph leaves it after a retried
// error and a fork, and reads its resume context and live messages back:
//
//	0001 input  __start__ wrote human h1
//	0002 loop   agent failed (rate limited), retried, wrote ai a1
//	0003 loop   agent wrote ai a2, which led to 0004
//	├─ 0004 loop  failed (boom): abandoned
//	0005 fork of 0003: agent wrote ai a3
//	0006 loop   head
//
// Every live-path step shows what ran, and a2, written only on the
// abandoned continuation of 0003, is not among the live messages.
func testResumeLivePath(t *testing.T, s TreeStore) {
	ref := NewRef()
	put := func(id, parent, source string, step int64) {
		in := NewCheckpoint(ref, id)
		in.ParentID = parent
		in.Metadata = saver.Metadata{"source": source, "step": step}
		MustPutCheckpoint(t, s, in)
	}
	pull := func(node, task string, idx int64, channel string, v saver.Typed) saver.Write {
		return saver.Write{TaskID: task, TaskPath: "~__pregel_pull, " + node, Idx: idx, Channel: channel, Value: v}
	}
	put("0001", "", "input", -1)
	MustPutWrites(t, s, At(ref, "0001"),
		pull("__start__", "t1", 0, "messages", MessageValue(t, "human", "h1", "What is 2+2?")),
		pull("__start__", "t1", 1, "branch:to:agent", saver.Typed{Type: "null"}))
	put("0002", "0001", "loop", 0)
	MustPutWrites(t, s, At(ref, "0002"), pull("agent", "t2", -1, saver.ChannelError, stringValue(t, "RateLimitError('429')")))
	MustPutWrites(t, s, At(ref, "0002"), pull("agent", "t2", 0, "messages", MessageValue(t, "ai", "a1", "Let me think.")))
	put("0003", "0002", "loop", 1)
	MustPutWrites(t, s, At(ref, "0003"), pull("agent", "t3", 0, "messages", MessageValue(t, "ai", "a2", "abandoned answer")))
	put("0004", "0003", "loop", 2)
	MustPutWrites(t, s, At(ref, "0004"), pull("tools", "t4", -1, saver.ChannelError, stringValue(t, "ValueError('boom')")))
	put("0005", "0003", "fork", 1)
	MustPutWrites(t, s, At(ref, "0005"), pull("agent", "t5", 0, "messages", MessageValue(t, "ai", "a3", "It is 4.")))
	put("0006", "0005", "loop", 2)

	tr := tree.Build(MustListNodes(t, s, ref.Tenant, ref.ThreadID))
	rc, err := resume.Build(t.Context(), s, ref.Tenant, tr, tr.Head(), resume.Options{})
	if err != nil {
		t.Fatalf("resume.Build: %v", err)
	}
	want := "step -1 · input: __start__ wrote messages: human: What is 2+2?\n" +
		"step 0 · error, retried: agent failed: RateLimitError('429'); then wrote messages: ai: Let me think.\n" +
		"step 1\n" +
		"  abandoned: 1 checkpoint, error: ValueError('boom')\n" +
		"step 1 · fork: agent wrote messages: ai: It is 4.\n" +
		"step 2\n"
	if diff := cmp.Diff(want, rc.Text()); diff != "" {
		t.Errorf("context text (-want +got):\n%s", diff)
	}
	if got := len(rc.Steps); got != 5 {
		t.Errorf("%d steps, want the 5 of the live path", got)
	}

	// Options: the last two steps, values cut at 6 bytes.
	rc, err = resume.Build(t.Context(), s, ref.Tenant, tr, tr.Head(), resume.Options{Limit: 2, ValueBytes: 6})
	if err != nil {
		t.Fatalf("resume.Build: %v", err)
	}
	want = "… 3 earlier steps left out\n" +
		"step 1 · fork: agent wrote messages: ai: It …\n" +
		"step 2\n"
	if diff := cmp.Diff(want, rc.Text()); diff != "" {
		t.Errorf("limited context text (-want +got):\n%s", diff)
	}

	ms, err := resume.Messages(t.Context(), s, ref.Tenant, tr.Head())
	if err != nil {
		t.Fatalf("resume.Messages: %v", err)
	}
	type msg struct{ Type, ID, Content string }
	var got []msg
	for _, m := range ms {
		data, _ := json.Marshal(m.Data)
		var d struct{ ID, Content string }
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, msg{m.Type, d.ID, d.Content})
	}
	wantMsgs := []msg{{"human", "h1", "What is 2+2?"}, {"ai", "a1", "Let me think."}, {"ai", "a3", "It is 4."}}
	if diff := cmp.Diff(wantMsgs, got); diff != "" {
		t.Errorf("live messages (-want +got):\n%s", diff)
	}
}
