package tree

import (
	"strconv"
	"strings"
)

// phrase is how a status reads in text: a failed attempt reads as the error
// it was, then what happened next.
func (s Status) phrase() string {
	switch s {
	case StatusRetried:
		return "error, retried"
	case StatusResumed:
		return "interrupted, resumed"
	}
	return string(s)
}

// summary is the part of a node's line in a drawing that says what it is.
func (n *Node) summary() string {
	source := n.Source
	if source == "" {
		source = "-" // LangGraph's exit-mode stub checkpoint has none.
	}
	return "step " + strconv.FormatInt(n.Step, 10) + " · " + source + " · " + n.Status().phrase()
}

// Heading is how a step opens its line in a prompt: its number, then its
// source and status only where they say something, since nearly every step
// is a "loop" that went "ok":
//
//	step 3
//	step 1 · fork
//	step 4 · error, retried
func Heading(step int64, source string, s Status) string {
	h := "step " + strconv.FormatInt(step, 10)
	switch source {
	case "loop":
	case "":
		h += " · -" // LangGraph's exit-mode stub checkpoint has none.
	default:
		h += " · " + source
	}
	if s != StatusOK {
		h += " · " + s.phrase()
	}
	return h
}

// ResumeContext returns the live path as text for a prompt, one line per
// checkpoint from the root to the head, each opened by its Heading:
//
//	step 2 · 1 abandoned branch
//	step 3 · error, retried
//	step 4 · interrupted
//
// Abandoned branches are counted at their fork point (see Abandoned).
// With limit > 0 only the last limit lines are kept, after a line saying how
// many were left out. It returns "" without a head.
func (t *Tree) ResumeContext(limit int) string {
	path := t.LivePath()
	forks := make(map[string]int)
	for _, b := range t.Abandoned() {
		forks[b.ForkPoint]++
	}
	var sb strings.Builder
	if limit > 0 && len(path) > limit {
		sb.WriteString("… " + plural(len(path)-limit, "earlier step") + " left out\n")
		path = path[len(path)-limit:]
	}
	for _, n := range path {
		sb.WriteString(Heading(n.Step, n.Source, n.Status()))
		if k := forks[n.ID]; k > 0 {
			sb.WriteString(" · " + plural(k, "abandoned branch"))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	switch {
	case n == 1:
		return s
	case strings.HasSuffix(noun, "ch"):
		return s + "es"
	}
	return s + "s"
}

// maxIndent bounds the drawing's indentation, in levels, so that a
// pathological tree cannot make its drawing quadratic in size. Real threads
// branch a few levels deep at most.
const maxIndent = 32

// Draw returns a text drawing of the whole tree, one line per checkpoint:
//
//	a1 · step -1 · input · ok
//	a2 · step 0 · loop · ok
//	├─ a3 · step 1 · loop · error · abandoned
//	a4 · step 1 · fork · ok · head
//
// A checkpoint's continuation (the live child, or else the newest child of
// its namespace) is drawn right below it at the same indentation, so a long
// chain stays flat; its other children, older forks and subgraph roots
// (marked with their namespace), hang off it with ├─ and └─ first. Trees of
// several roots are separated by a blank line. Lines are marked "head",
// "abandoned" (the leaf of an abandoned branch) and "orphan".
func (t *Tree) Draw() string {
	type item struct {
		n      *Node
		lead   string // drawn before the glyph on n's line
		glyph  string // "", "├─ " or "└─ "
		indent int    // levels in lead
	}
	var sb strings.Builder
	var stack []item
	for i := len(t.roots) - 1; i >= 0; i-- {
		stack = append(stack, item{n: t.roots[i]})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := it.n
		if n.Parent == nil && n != t.roots[0] {
			sb.WriteByte('\n')
		}
		sb.WriteString(it.lead)
		sb.WriteString(it.glyph)
		sb.WriteString(t.label(n))
		sb.WriteByte('\n')

		// Lines below n inside its subtree carry n's lead, plus the
		// vertical of n's own glyph when n hangs off a parent.
		lead, indent := it.lead, it.indent
		if it.glyph != "" && indent < maxIndent {
			indent++
			if it.glyph == "├─ " {
				lead += "│  "
			} else {
				lead += "   "
			}
		}
		main := n.next()
		if main != nil {
			stack = append(stack, item{n: main, lead: lead, indent: indent})
		}
		var sides []*Node
		for _, c := range n.Children {
			if c != main {
				sides = append(sides, c)
			}
		}
		for i := len(sides) - 1; i >= 0; i-- {
			glyph := "├─ "
			if i == len(sides)-1 && main == nil {
				glyph = "└─ "
			}
			stack = append(stack, item{n: sides[i], lead: lead, glyph: glyph, indent: indent})
		}
	}
	return sb.String()
}

// label is a node's line in a drawing, without the tree glyphs.
func (t *Tree) label(n *Node) string {
	s := n.ID + " · " + n.summary()
	if n.Parent == nil && n.NS != "" || n.Parent != nil && n.NS != n.Parent.NS {
		s += " · ns " + n.NS
	}
	if n == t.head {
		s += " · head"
	}
	if n.NS == "" && !n.Live && n.next() == nil {
		s += " · abandoned"
	}
	if n.Orphan {
		s += " · orphan"
	}
	return s
}
