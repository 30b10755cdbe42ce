package valueview

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ellipsis ends a rendering cut short.
const ellipsis = "…"

// Render writes v as compact text of at most max bytes (max < 1: no bound),
// cut with "…" where it would overflow. Containers are written as JSON is;
// messages as Class("text"), other objects as their class name followed by
// their arguments, ext types and unreadable values by type and size:
//
//	{"messages":[HumanMessage("hi"),AIMessage("hello")],"seen":set[1,2]}
//	<msgpack+aes, 120 bytes>
func Render(v Value, max int) string {
	w := writer{max: max}
	w.value(v)
	return w.String()
}

// writer is a strings.Builder that stops at max bytes, then ends in "…".
type writer struct {
	sb   strings.Builder
	max  int
	full bool
}

func (w *writer) String() string { return w.sb.String() }

// room is how many more bytes fit, keeping space for the ellipsis.
func (w *writer) room() int {
	if w.max < 1 {
		return int(^uint(0) >> 1)
	}
	return w.max - len(ellipsis) - w.sb.Len()
}

// write appends s, or as much of it as fits on a rune boundary and then the
// ellipsis; nothing is written once full.
func (w *writer) write(s string) {
	if w.full {
		return
	}
	if r := w.room(); len(s) > r {
		for r > 0 && !utf8.RuneStart(s[r]) {
			r--
		}
		w.sb.WriteString(s[:max(r, 0)])
		if w.max >= len(ellipsis) {
			w.sb.WriteString(ellipsis)
		}
		w.full = true
		return
	}
	w.sb.WriteString(s)
}

// quote writes s as a JSON string, escaping only as far as it fits.
func (w *writer) quote(s string) {
	w.write(`"`)
	for len(s) > 0 && !w.full {
		// Escape a chunk no longer than what fits, so a huge string costs
		// only the room left.
		n := len(s)
		if r := max(w.room(), 0); r < n-utf8.UTFMax {
			n = r + utf8.UTFMax
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		q := strconv.Quote(s[:n])
		w.write(q[1 : len(q)-1])
		s = s[n:]
	}
	w.write(`"`)
}

func (w *writer) value(v Value) {
	if w.full {
		return
	}
	switch v.Kind {
	case Null:
		w.write("null")
	case Bool:
		w.write(strconv.FormatBool(v.Bool))
	case Number:
		w.write(v.Text)
	case String:
		w.quote(v.Text)
	case Bytes:
		w.write("<bytes, " + plural(v.Size, "byte") + ">")
	case Opaque:
		w.write("<" + v.Text + ", " + plural(v.Size, "byte") + ">")
	case Cut:
		if v.Size > 0 {
			w.write("… " + strconv.Itoa(v.Size) + " more")
		} else {
			w.write(ellipsis)
		}
	case Array:
		w.list("[", v.Items, "]")
	case Map:
		w.write("{")
		for i := 0; i+1 < len(v.Items); i += 2 {
			if i > 0 {
				w.write(",")
			}
			if v.Items[i].Kind == Cut {
				w.value(v.Items[i])
				break
			}
			w.value(v.Items[i])
			w.write(":")
			w.value(v.Items[i+1])
		}
		w.write("}")
	case Object:
		w.object(v)
	}
}

func (w *writer) list(open string, items []Value, close string) {
	w.write(open)
	for i, e := range items {
		if i > 0 {
			w.write(",")
		}
		w.value(e)
	}
	w.write(close)
}

// object writes a message as Class("text"), a set, frozenset or deque as
// set[...], a constructor's positional arguments as Class(a,b), and any
// other object as its class and its one argument: Class{"field":…},
// UUID("…"), datetime("2024-…").
func (w *writer) object(v Value) {
	if m, ok := AsMessage(v); ok {
		w.write(v.Name + "(")
		w.quote(m.Text)
		for _, c := range m.ToolCalls {
			w.write(",→" + c.Name)
			w.value(c.Args)
		}
		w.write(")")
		return
	}
	var arg Value
	if len(v.Items) > 0 {
		arg = v.Items[0]
	}
	switch {
	case v.Module == "builtins" || v.Module == "collections":
		if arg.Kind == Array {
			w.list(v.Name+"[", arg.Items, "]")
			return
		}
	case v.Code == ExtConstructorPosArgs && arg.Kind == Array:
		w.list(v.Name+"(", arg.Items, ")")
		return
	case arg.Kind == Map:
		w.write(v.Name)
		w.value(arg)
		return
	}
	w.write(v.Name + "(")
	w.value(arg)
	w.write(")")
}

func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}
