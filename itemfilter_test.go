package saver_test

import (
	"strings"
	"testing"

	"github.com/saver-dev/saver"
)

// TestItemFilterMatch holds cases whose expected answers are what
// InMemoryStore's _compare_values gives for the same value and filter
// (checked with langgraph 1.x), Python's True == 1 among them.
func TestItemFilterMatch(t *testing.T) {
	tests := []struct {
		value, filter string
		want          bool
	}{
		{`{"a": 1}`, `{"a": 1}`, true},
		{`{"a": 1}`, `{"a": 1.0}`, true},
		{`{"a": true}`, `{"a": 1}`, true},
		{`{"a": 1}`, `{"a": true}`, true},
		{`{"a": false}`, `{"a": 0}`, true},
		{`{"a": true}`, `{"a": 1.0}`, true},
		{`{"a": 2}`, `{"a": true}`, false},
		{`{"a": "1"}`, `{"a": 1}`, false},
		{`{}`, `{"a": null}`, true},
		{`{"a": null}`, `{"a": null}`, true},
		{`{"a": 0}`, `{"a": null}`, false},
		{`{"a": {"b": 1, "c": 2}}`, `{"a": {"b": 1}}`, true},
		{`{"a": {"b": 1}}`, `{"a": {"b": 1, "c": 2}}`, false},
		{`{"a": {"b": {"c": "x"}}}`, `{"a": {"b": {"c": "x"}}}`, true},
		{`{"a": [1, 2]}`, `{"a": [1, 2]}`, true},
		{`{"a": [1, 2]}`, `{"a": [1]}`, false},
		{`{"a": [{"x": 1, "y": 2}]}`, `{"a": [{"x": 1}]}`, true},
		{`{"a": {"b": 1}}`, `{"a": 1}`, false},
		{`{"a": 5}`, `{"a": {"$gt": 4}}`, true},
		{`{"a": 5}`, `{"a": {"$gt": 5}}`, false},
		{`{"a": 5}`, `{"a": {"$gte": 5}}`, true},
		{`{"a": 5}`, `{"a": {"$lt": 5.5}}`, true},
		{`{"a": 5}`, `{"a": {"$lte": 4.9}}`, false},
		{`{"a": "7"}`, `{"a": {"$gt": 6}}`, true},
		{`{"a": true}`, `{"a": {"$gt": 0.5}}`, true},
		{`{"a": 5}`, `{"a": {"$gt": "4"}}`, true},
		{`{"a": 5}`, `{"a": {"$gt": 4, "$lt": 6}}`, true},
		{`{"a": 5}`, `{"a": {"$gt": 4, "$lt": 5}}`, false},
		{`{"a": 5}`, `{"a": {"$ne": 5}}`, false},
		{`{"a": 5}`, `{"a": {"$ne": 6}}`, true},
		{`{}`, `{"a": {"$ne": 6}}`, true},
		{`{"a": {"x": 1}}`, `{"a": {"$eq": {"x": 1}}}`, true},
		{`{"a": {"x": 1, "y": 2}}`, `{"a": {"$eq": {"x": 1}}}`, false},
		{`{"a": {"x": true}}`, `{"a": {"$eq": {"x": 1}}}`, true},
		{`{"a": [1, true]}`, `{"a": {"$eq": [1.0, 1]}}`, true},
		{`{"a": {"b": 5}}`, `{"a": {"b": {"$gte": 5}}}`, true},
		{`{"a": 9007199254740993}`, `{"a": 9007199254740992.0}`, false},
		{`{"a": 9007199254740992}`, `{"a": 9007199254740992.0}`, true},
		{`{"a": 1e400}`, `{"a": {"$gt": 1e+308}}`, true},
		{`{"a": "x"}`, `{"a": "x"}`, true},
		{`{"a": "x"}`, `{"a": "y"}`, false},
		// Strings compared for equality are looked for in the value's text
		// before it is decoded, unless the value holds an escape.
		{`{"a": "t\u0037"}`, `{"a": "t7"}`, true},
		{`{"a": "t7"}`, `{"a": "t\u0037"}`, true},
		{`{"a": "x\"y"}`, `{"a": "x\"y"}`, true},
		{`{"a": "\u00e9"}`, `{"a": "é"}`, true},
		{`{"a": "é"}`, `{"a": "é"}`, true},
		{`{"b": "x", "a": "y"}`, `{"a": "x"}`, false},
		{`{"a": ["x", "y"]}`, `{"a": ["x", "y"]}`, true},
		{`{"a": ["x", "y"]}`, `{"a": ["x", "z"]}`, false},
		{`{"a": "x"}`, `{"a": {"$eq": "x"}}`, true},
		{`{"a": "y"}`, `{"a": {"$eq": "x"}}`, false},
		{`{"a": {"b": "x"}}`, `{"a": {"b": "x"}}`, true},
		{`{"a": {"b": "y"}}`, `{"a": {"b": "x"}}`, false},
		{`{"a":"x"}`, `{"a": {"$ne": "y"}}`, true},
		{`{"a": 1, "b": 2}`, `{"a": 1, "b": 3}`, false},
		{`{"$gt": 1}`, `{"$gt": 1}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.value+" "+tt.filter, func(t *testing.T) {
			f, err := saver.ParseItemFilter([]byte(tt.filter))
			if err != nil {
				t.Fatalf("ParseItemFilter: %v", err)
			}
			got, err := f.Match([]byte(tt.value))
			if err != nil {
				t.Fatalf("Match: %v", err)
			}
			if got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestItemFilterDiffers holds the cases where InMemoryStore raises and the
// service answers: a numeric operator on a field float() cannot convert
// does not match.
func TestItemFilterDiffers(t *testing.T) {
	for _, value := range []string{`{}`, `{"a":null}`, `{"a":"x"}`, `{"a":[1]}`, `{"a":{"b":1}}`} {
		f, err := saver.ParseItemFilter([]byte(`{"a":{"$gt":0}}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := f.Match([]byte(value)); err != nil || got {
			t.Errorf("Match(%s) = %v, %v; want false", value, got, err)
		}
	}
}

func TestParseItemFilterErrors(t *testing.T) {
	tests := []struct{ filter, inMessage string }{
		{`[1]`, "filter must be a JSON object"},
		{`"x"`, "filter must be a JSON object"},
		{`{"a":`, "filter is not valid JSON"},
		{`{"a":{"$gt":1,"b":2}}`, "filter.a"},
		{`{"a":{"$regex":"x"}}`, "filter.a"},
		{`{"a":{"$gt":"abc"}}`, "filter.a.$gt"},
		{`{"a":{"$lt":null}}`, "filter.a.$lt"},
		{`{"a":{"b":{"$gte":[1]}}}`, "filter.a.b.$gte"},
		{`{"a":[{"$in":[1]}]}`, "filter.a[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			_, err := saver.ParseItemFilter([]byte(tt.filter))
			if got, want := saver.ErrorCode(err), saver.EINVALID; got != want {
				t.Fatalf("code = %q, want %q (%v)", got, want, err)
			}
			if msg := saver.ErrorMessage(err); !strings.Contains(msg, tt.inMessage) {
				t.Fatalf("message %q does not name %q", msg, tt.inMessage)
			}
		})
	}
}
