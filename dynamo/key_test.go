package dynamo

import (
	"strconv"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
)

// unescape reverses escape; ok is false for a string escape cannot return.
func unescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < esc:
			return "", false
		case c > esc:
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hex := s[i+1 : i+3]
		v, err := strconv.ParseUint(hex, 16, 8)
		if err != nil || byte(v) > esc || hex != strings.ToUpper(hex) {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Empty", "", ""},
		{"Plain", "thread-1", "thread-1"},
		{"UUID", "1ef4f797-8335-6428-8001-8a1503f9b875", "1ef4f797-8335-6428-8001-8a1503f9b875"},
		{"Separator", "a!b", "a#21b"},
		{"Escape", "a#b", "a#23b"},
		{"EscapedLookalike", "a#21b", "a#2321b"},
		{"Space", "child 1", "child#201"},
		{"Quote", `"x"`, "#22x#22"},
		{"Controls", "\x00\x01\n", "#00#01#0A"},
		{"Dollar", "$", "$"},
		{"Unicode", "ünï/code", "ünï/code"},
		{"Subgraph", "parent:1|child:2", "parent:1|child:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escape(tt.in); got != tt.want {
				t.Fatalf("escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got, ok := unescape(tt.want); !ok || got != tt.in {
				t.Fatalf("unescape(%q) = %q, %v; want %q", tt.want, got, ok, tt.in)
			}
		})
	}
}

// TestKeysDoNotCollide lists pairs of inputs that a naive join would map to
// the same key.
func TestKeysDoNotCollide(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"PartitionSplit", partitionKey("a!b", "c"), partitionKey("a", "b!c")},
		{"PartitionEmptyTenant", partitionKey("", "a!b"), partitionKey("a", "b")},
		{"PartitionEscapeLookalike", partitionKey("a#21b", "c"), partitionKey("a!b", "c")},
		{"CheckpointNSvsID", checkpointKey("a!b", "c"), checkpointKey("a", "b!c")},
		{"CheckpointEmptyNS", checkpointKey("", "a!b"), checkpointKey("a", "b")},
		{"WriteTaskSplit", writeKey("", "1", "t!0", 1), writeKey("", "1", "t", 0)},
		{"WriteNegativeIdx", writeKey("", "1", "t", -1), writeKey("", "1", "t-", 1)},
		{"WriteVsCheckpoint", writeKey("", "1", "t", 0), checkpointKey("", "1!w!t!0")},
		{"BlobSplit", blobKey("", "a!b", "c"), blobKey("", "a", "b!c")},
		{"BlobNSvsChannel", blobKey("a", "b", "c"), blobKey("", "a!b", "c")},
		{"HashedVsEscaped", part(strings.Repeat("x", maxNamePart+1), maxNamePart), part("#Z", maxNamePart)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.a == tt.b {
				t.Fatalf("both keys are %q", tt.a)
			}
		})
	}
}

// TestKeyOrder checks that checkpoint keys sort as their ids compare, and
// that a checkpoint's writes sort right after it, before the next id.
func TestKeyOrder(t *testing.T) {
	ids := []string{"", "\x00", " ", "!", "!a", "#", "#21", "$", "0", "1", "1!", "1#", "10", "1a", "a", "z", "ü"}
	for _, a := range ids[1:] {
		for _, b := range ids[1:] {
			ka, kb := checkpointKey("ns", a), checkpointKey("ns", b)
			if (a < b) != (ka < kb) {
				t.Errorf("ids %q < %q is %v, keys %q < %q is %v", a, b, a < b, ka, kb, ka < kb)
			}
			if a < b {
				w := writeKey("ns", a, "~task~", 99)
				if !(ka < w && w < kb) {
					t.Errorf("write of %q at %q is not between %q and %q", a, w, ka, kb)
				}
				if bound := beforeBound("ns", b); !(w < bound && kb > bound) {
					t.Errorf("before %q: bound %q does not split %q and %q", b, bound, w, kb)
				}
			}
		}
	}
}

// TestKeyLengths checks the longest keys valid input can build against
// DynamoDB's limits: 2,048 bytes for a partition key, 1,024 for a sort key.
// The worst inputs come from the domain's own validation, not from a guess:
// it once took a namespace of 512 "!" (hashed, so short) as the worst and
// missed one of 100 "!", the longest kept whole, which with a checkpoint id
// of 256 "!" built a 1,072-byte sort key.
func TestKeyLengths(t *testing.T) {
	ns := worst(func(s string) error { return saver.ValidateNS(s) }, saver.MaxNSBytes, nsPrefix)
	id := worst(func(s string) error { return saver.ValidateCheckpointID("checkpoint_id", s) }, saver.MaxIDBytes, escape)
	name := worst(func(s string) error { return saver.ValidateID("task_id", s) }, saver.MaxIDBytes,
		func(s string) string { return part(s, maxNamePart) })
	minIdx := int64(-1 << 63)
	keys := map[string]string{
		"checkpoint": checkpointKey(ns, id),
		"write":      writeKey(ns, id, name, minIdx),
		"bundle":     bundleKey(saver.CheckpointRef{NS: ns, ID: id}, name, maxBundles),
		"blob":       blobKey(ns, name, name),
		"lifetimes":  getS(lifetimesKey("", ns), attrSK),
		"before":     beforeBound(ns, id),
		"item":       itemSortKey(worstNamespace(t), worstItemKey(t)),
	}
	for kind, k := range keys {
		if len(k) > 1024 {
			t.Errorf("%s sort key is %d bytes long (namespace part %d bytes, id %d)", kind, len(k), len(part(ns, maxNSPart)), len(escape(id)))
		}
	}
	thread := worst(saver.ValidateThreadID, saver.MaxIDBytes, escape)
	tenant := strings.Repeat("!", 10_000) // tenants come from the key file; hashed past maxTenantKey
	pks := map[string]string{
		"thread": partitionKey(tenant, thread),
		"ledger": getS(ledgerKey(tenant, name), attrPK),
		"items":  itemPartition(tenant, itemShards-1),
	}
	for kind, k := range pks {
		if len(k) > 2048 {
			t.Errorf("%s partition key is %d bytes long", kind, len(k))
		}
	}
}

// worstNamespace is the longest namespace the domain accepts as a store
// key holds it: labels of "!" (three bytes each) up to the namespace's
// limit. One byte more is refused.
func worstNamespace(t *testing.T) saver.Namespace {
	t.Helper()
	label := strings.Repeat("!", (saver.MaxLabelKeyBytes-1)/3) // 255 bytes, + 1 separator
	ns := saver.Namespace{label, label}
	if err := ns.Validate("namespace"); err != nil {
		t.Fatal(err)
	}
	if n := len(itemNSPrefix(ns)) - len(itemNSPrefix(nil)); n != saver.MaxNamespaceKeyBytes {
		t.Fatalf("the worst namespace takes %d bytes, want %d", n, saver.MaxNamespaceKeyBytes)
	}
	if err := append(ns, "x").Validate("namespace"); err == nil {
		t.Fatal("a namespace over the limit passed")
	}
	return ns
}

// worstItemKey is the longest item key the domain accepts as a store key
// holds it: "!" up to the limit (three bytes each).
func worstItemKey(t *testing.T) string {
	t.Helper()
	k := strings.Repeat("!", saver.MaxItemKeyBytes/3)
	if err := saver.ValidateItemKey(k); err != nil || len(escape(k)) != saver.MaxItemKeyBytes {
		t.Fatalf("the worst key: %v, %d bytes", err, len(escape(k)))
	}
	if saver.ValidateItemKey(k+"x") == nil {
		t.Fatal("a key over the limit passed")
	}
	return k
}

// worst returns, of the strings of a "!" (escaped to three bytes) then b "x"
// (kept as they are) up to max bytes in all that valid accepts, the one
// whose build is longest: escaping and hashing meet somewhere in between.
func worst(valid func(string) error, max int, build func(string) string) string {
	var w string
	n := -1
	for a := 0; a <= max; a++ {
		for b := 0; a+b <= max; b++ {
			s := strings.Repeat("!", a) + strings.Repeat("x", b)
			if valid(s) != nil {
				continue
			}
			if k := len(build(s)); k > n {
				w, n = s, k
			}
		}
	}
	return w
}

// FuzzEscape checks that escape round-trips, never emits sep and keeps byte
// order. Its seed corpus runs in plain `go test`.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a", "!", "#", "#21", "a!b", "\x00", "ü", "1ef4f797-8335-6428-8001-8a1503f9b875"} {
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, eb := escape(a), escape(b)
		if strings.IndexByte(ea, sep) >= 0 {
			t.Fatalf("escape(%q) = %q holds the separator", a, ea)
		}
		if got, ok := unescape(ea); !ok || got != a {
			t.Fatalf("unescape(escape(%q)) = %q, %v", a, got, ok)
		}
		if len(ea) != saver.KeyBytes(a) {
			t.Fatalf("escape(%q) is %d bytes, saver.KeyBytes says %d", a, len(ea), saver.KeyBytes(a))
		}
		if (a == b) != (ea == eb) {
			t.Fatalf("escape(%q) = %q, escape(%q) = %q", a, ea, b, eb)
		}
		if ka, kb := key(ea), key(eb); (a < b) != (ka < kb) {
			t.Fatalf("%q < %q but keys %q < %q is %v", a, b, ka, kb, ka < kb)
		}
	})
}
