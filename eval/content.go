package eval

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxStepTextBytes bounds each of a recorded step's texts (Step.Command,
// Step.Printed, Step.Message): the importers keep an excerpt of that many
// bytes at most, its middle cut out. It is more than a content window
// shows of a call by default (trajectory.DefaultContentCallBytes), so that
// a window with a larger budget (--content-bytes) reads more of them.
const MaxStepTextBytes = 4 << 10

// Excerpt is s cut to at most n bytes: its head and its tail, with a note
// of the bytes cut between them (an error or a summary is often at the end
// of what a command printed). Cuts fall on rune boundaries; invalid UTF-8
// is dropped. It is a function of s: two equal texts have equal excerpts.
func Excerpt(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	note := func(cut int) string { return "\n[… " + strconv.Itoa(cut) + " bytes cut …]\n" }
	room := n - len(note(len(s)))
	if room < 8 {
		return runePrefix(s, n)
	}
	head := runePrefix(s, room*2/3)
	tail := runeSuffix(s, room-len(head))
	return head + note(len(s)-len(head)-len(tail)) + tail
}

// runePrefix is the longest prefix of s of at most n bytes that ends on a
// rune boundary.
func runePrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// runeSuffix is the longest suffix of s of at most n bytes that starts on
// a rune boundary.
func runeSuffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// stepText is an importer's excerpt of a step's text: trimmed, then cut to
// MaxStepTextBytes.
func stepText(s string) string { return Excerpt(strings.TrimSpace(s), MaxStepTextBytes) }
