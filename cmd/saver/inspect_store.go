package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// The Store's commands read items through the batch route, one op per
// command, as a client's BaseStore does.

// storeItemJSON is an item as the batch route answers it.
type storeItemJSON struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	CreatedAt string          `json:"created_at"`
	UpdatedAt string          `json:"updated_at"`
}

type storeResultJSON struct {
	Item       *storeItemJSON  `json:"item"`
	Items      []storeItemJSON `json:"items"`
	Namespaces [][]string      `json:"namespaces"`
}

// valueColumn is how many characters of a value the items table shows.
const valueColumn = 60

// storeOp runs one op and returns its result.
func (in *inspector) storeOp(ctx context.Context, op map[string]any) (storeResultJSON, error) {
	var resp struct {
		Results []storeResultJSON `json:"results"`
	}
	err := in.call(ctx, "POST", "/v1/store/batch", map[string]any{"ops": []any{op}}, &resp)
	var he *httpError
	if errors.As(err, &he) && he.status == 404 {
		return storeResultJSON{}, errors.New("inspect: this service does not serve the Store (no /v1/store/batch)")
	}
	if err != nil {
		return storeResultJSON{}, err
	}
	if len(resp.Results) != 1 {
		return storeResultJSON{}, fmt.Errorf("inspect: the service answered %d results for one op", len(resp.Results))
	}
	return resp.Results[0], nil
}

// parseNamespace reads a namespace written as its labels joined by dots,
// LangGraph's notation; labels cannot hold a dot, so it is unambiguous.
func parseNamespace(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("inspect: a namespace needs at least one label")
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" {
			return nil, fmt.Errorf("inspect: namespace %q has an empty label", s)
		}
	}
	return labels, nil
}

func nsString(ns []string) string { return strings.Join(ns, ".") }

func (in *inspector) namespaces(ctx context.Context) error {
	op := map[string]any{"op": "list_namespaces", "limit": in.limit, "offset": in.offset}
	if in.prefix != "" {
		prefix, err := parseNamespace(in.prefix)
		if err != nil {
			return err
		}
		op["match_conditions"] = []any{map[string]any{"match_type": "prefix", "path": prefix}}
	}
	if in.maxDepth != 0 {
		op["max_depth"] = in.maxDepth
	}
	r, err := in.storeOp(ctx, op)
	if err != nil {
		return err
	}
	out := r.Namespaces
	if out == nil {
		out = [][]string{}
	}
	return in.print(out, func(w io.Writer) {
		if len(out) == 0 {
			fmt.Fprintln(w, "no namespace holds items")
			return
		}
		for _, ns := range out {
			fmt.Fprintln(w, nsString(ns))
		}
		if len(out) == in.limit {
			fmt.Fprintf(w, "(the first %d; -offset %d for more)\n", in.limit, in.offset+in.limit)
		}
	})
}

func (in *inspector) items(ctx context.Context, namespace string) error {
	prefix, err := parseNamespace(namespace)
	if err != nil {
		return err
	}
	op := map[string]any{"op": "search", "namespace_prefix": prefix, "limit": in.limit, "offset": in.offset}
	if in.filter != "" {
		if !json.Valid([]byte(in.filter)) {
			return fmt.Errorf("inspect: -filter is not JSON: %s", in.filter)
		}
		op["filter"] = json.RawMessage(in.filter)
	}
	r, err := in.storeOp(ctx, op)
	if err != nil {
		return err
	}
	out := r.Items
	if out == nil {
		out = []storeItemJSON{}
	}
	return in.print(out, func(w io.Writer) {
		if len(out) == 0 {
			fmt.Fprintf(w, "no items under %s\n", namespace)
			return
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAMESPACE\tKEY\tUPDATED\tBYTES\tVALUE")
		for _, it := range out {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", nsString(it.Namespace), keyLabel(it.Key), it.UpdatedAt,
				len(it.Value), clip(compactJSON(it.Value), valueColumn))
		}
		tw.Flush()
		if len(out) == in.limit {
			fmt.Fprintf(w, "(the first %d, newest update first; -offset %d for more)\n", in.limit, in.offset+in.limit)
		}
	})
}

func (in *inspector) item(ctx context.Context, namespace, key string) error {
	ns, err := parseNamespace(namespace)
	if err != nil {
		return err
	}
	r, err := in.storeOp(ctx, map[string]any{"op": "get", "namespace": ns, "key": key})
	if err != nil {
		return err
	}
	if r.Item == nil {
		return fmt.Errorf("inspect: no item %q in %s (or it expired)", key, namespace)
	}
	it := r.Item
	return in.print(it, func(w io.Writer) {
		fmt.Fprintf(w, "item       %q in %s\ncreated    %s\nupdated    %s\nvalue (%d bytes):\n",
			it.Key, nsString(it.Namespace), it.CreatedAt, it.UpdatedAt, len(it.Value))
		var b bytes.Buffer
		if json.Indent(&b, it.Value, "", "  ") != nil {
			b.Reset()
			b.Write(it.Value)
		}
		fmt.Fprintln(w, b.String())
	})
}

// keyLabel is a key in a table: an empty key (a key to LangGraph) shows as "".
func keyLabel(k string) string {
	if k == "" {
		return `""`
	}
	return k
}

// compactJSON is v on one line.
func compactJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// clip cuts s to n characters, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
