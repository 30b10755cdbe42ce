package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/saver-dev/saver/valueview"
)

// printShown writes a checkpoint's values and writes as the service decoded
// them: each value's rendering, or its messages as a conversation.
func printShown(w io.Writer, c *valueview.Checkpoint) {
	fmt.Fprintln(w, "values:")
	if len(c.Values) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, v := range c.Values {
		printOne(w, terminalSafe(v.Channel), v)
	}
	fmt.Fprintln(w, "writes:")
	if len(c.Writes) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, v := range c.Writes {
		printOne(w, terminalSafe(v.TaskID)+" → "+terminalSafe(v.Channel), v)
	}
}

func printOne(w io.Writer, label string, v valueview.Shown) {
	if len(v.Messages) == 0 {
		fmt.Fprintf(w, "  %s = %s\n", label, terminalSafe(v.Value))
		return
	}
	fmt.Fprintf(w, "  %s: %d messages\n", label, len(v.Messages))
	for _, m := range v.Messages {
		text := strings.ReplaceAll(terminalSafe(m.Text), "\n", "\n      ")
		fmt.Fprintf(w, "    %s: %s\n", terminalSafe(m.Role), text)
		for _, call := range m.ToolCalls {
			fmt.Fprintf(w, "      → %s\n", terminalSafe(call))
		}
	}
}

// terminalSafe escapes the control characters of stored text (but newline
// and tab), so that a value cannot move the cursor, recolour or retitle
// the terminal it is printed to.
func terminalSafe(s string) string {
	if strings.IndexFunc(s, control) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if control(r) {
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// control: C0 and C1 controls, line and paragraph separators, the
// bidirectional overrides and isolates (which reorder what follows), and
// the stand-in for bytes that are not UTF-8.
func control(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r), r == '\u2028', r == '\u2029', r == unicode.ReplacementChar:
		return true
	}
	return r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
}
