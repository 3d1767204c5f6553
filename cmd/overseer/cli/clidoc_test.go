package cli_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
)

// repoRoot is the repository's root from this package's directory.
const repoRoot = "../../.."

// cliReference renders docs/cli.md from the commands' own flag sets.
func cliReference(t *testing.T) string {
	t.Helper()
	all, err := cli.CommandFlagSets()
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("# CLI reference\n\n")
	b.WriteString("<!-- Generated from the commands' own flag sets: do not edit. Regenerate with\n")
	b.WriteString("     (cd cmd && go test ./overseer/cli -run TestCLIReference -update); make lint fails when it is stale. -->\n\n")
	b.WriteString("Every command of `overseer` with every flag its flag set defines, as `overseer <command> -h`\n")
	b.WriteString("prints them. Flags go anywhere on the line (`overseer resume ID --by NAME` and\n")
	b.WriteString("`overseer resume --by NAME ID` are the same); `-flag` and `--flag` are the same flag.\n")
	b.WriteString("`overseer help` lists the commands, `overseer --version` prints the version. Exit codes: 0 on\n")
	b.WriteString("success, 1 for a refused or failed operation, 2 for a usage error.\n\n")
	for _, c := range all {
		fmt.Fprintf(&b, "- [`overseer %s`](#%s)\n", c.Path, anchor("overseer "+c.Path))
	}
	lastSynopsis := ""
	for _, c := range all {
		fmt.Fprintf(&b, "\n## overseer %s\n\n", c.Path)
		if c.Synopsis != lastSynopsis {
			fmt.Fprintf(&b, "%s\n\n", mdText(upperFirst(c.Synopsis)))
			lastSynopsis = c.Synopsis
		}
		if len(c.Flags) == 0 {
			b.WriteString("No flags.\n")
			continue
		}
		b.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
		for _, f := range c.Flags {
			typ, usage := flag.UnquoteUsage(f)
			name := "--" + f.Name
			if len(f.Name) == 1 {
				name = "-" + f.Name
			}
			if typ != "" {
				name += " " + typ
			}
			def := ""
			if !zeroDefault(f.DefValue) {
				def = "`" + strings.ReplaceAll(f.DefValue, "|", "\\|") + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, def, mdText(usage))
		}
	}
	return b.String()
}

func zeroDefault(v string) bool {
	switch v {
	case "", "false", "0", "0s", "[]":
		return true
	}
	return false
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdText escapes what Markdown would read as a table cell's end, HTML or
// emphasis (an underscore inside a word is no emphasis in GitHub's
// Markdown).
func mdText(s string) string {
	r := strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;", "*", "\\*", "\n", " ")
	return r.Replace(s)
}

// anchor is GitHub's heading anchor for a heading of letters, digits,
// spaces and dashes.
func anchor(heading string) string {
	return strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}

// TestCLIReference fails when docs/cli.md is not what the commands' flag
// sets generate: a flag added, removed or reworded without
// `go test ./overseer/cli -run TestCLIReference -update`.
func TestCLIReference(t *testing.T) {
	got := cliReference(t)
	path := filepath.Join(repoRoot, "docs", "cli.md")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run (cd cmd && go test ./overseer/cli -run TestCLIReference -update) to create %s", path)
	if string(want) != got {
		t.Errorf("docs/cli.md is stale: run (cd cmd && go test ./overseer/cli -run TestCLIReference -update); lines that differ:\n%s",
			lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+), each
// once with how many times it differs.
func lineDiff(want, got string) string {
	count := func(s string) (map[string]int, []string) {
		m := map[string]int{}
		var order []string
		for _, l := range strings.Split(s, "\n") {
			if m[l] == 0 {
				order = append(order, l)
			}
			m[l]++
		}
		return m, order
	}
	w, wOrder := count(want)
	g, gOrder := count(got)
	var b strings.Builder
	list := func(sign string, order []string, a, other map[string]int) {
		for _, l := range order {
			if n := a[l] - other[l]; n > 0 {
				fmt.Fprintf(&b, "%s %s", sign, l)
				if n > 1 {
					fmt.Fprintf(&b, "   (×%d)", n)
				}
				b.WriteString("\n")
			}
		}
	}
	list("-", wOrder, w, g)
	list("+", gOrder, g, w)
	return b.String()
}

// invocation is one `overseer …` command line found in a document.
type invocation struct {
	file string
	line int
	args []word
}

type word struct {
	text   string
	quoted bool // had quotes: a value, never a flag
}

// shellWords splits a command line as a shell would, roughly: quotes
// group, and an unquoted separator (|, ;, &&, ||, >, <, #, a closing
// backquote or parenthesis) ends the command.
func shellWords(s string) []word {
	var words []word
	var cur strings.Builder
	quoted, in := false, false
	var q rune
	flush := func() {
		if in {
			words = append(words, word{cur.String(), quoted})
		}
		cur.Reset()
		quoted, in = false, false
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case q != 0:
			if r == q {
				q = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			q, quoted, in = r, true, true
		case r == ' ' || r == '\t':
			flush()
		case r == '|' || r == ';' || r == '&' || r == '>' || r == '<' || r == ')' || r == '`':
			flush()
			return words
		case r == '#' && !in:
			flush()
			return words
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return words
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`([^`]+)`")
	// A command name: lower-case letters and dashes.
	commandName = regexp.MustCompile(`^[a-z][a-z-]*$`)
)

// invocations finds every `overseer …` command line in a Markdown file:
// in fenced code blocks (a line ending in \ continues) and in inline code.
// The program is `overseer` or a path ending in /overseer (./cmd/overseer
// after go run).
func invocations(file, text string) []invocation {
	var found []invocation
	scan := func(line int, s string) {
		ws := shellWords(s)
		for i, w := range ws {
			if w.quoted || !(w.text == "overseer" || strings.HasSuffix(w.text, "/overseer")) {
				continue
			}
			if !runsProgram(ws[:i]) {
				continue // go install ./cmd/overseer, kubectl -n overseer: not a run of it
			}
			found = append(found, invocation{file, line, ws[i+1:]})
			return
		}
	}
	lines := strings.Split(text, "\n")
	inFence := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if fence.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence {
			start := i
			for strings.HasSuffix(strings.TrimSpace(l), "\\") && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(strings.TrimSpace(l), "\\") + " " + lines[i]
			}
			scan(start+1, l)
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(l, -1) {
			scan(i+1, m[1])
		}
	}
	return found
}

// runsProgram says whether the words before the program leave it the
// command that runs: nothing, environment assignments (VAR=value), or go
// run.
func runsProgram(before []word) bool {
	n := len(before)
	if n >= 2 && before[n-2].text == "go" && before[n-1].text == "run" {
		n -= 2
	}
	for _, w := range before[:n] {
		if w.quoted || !strings.Contains(w.text, "=") || strings.HasPrefix(w.text, "-") {
			return false
		}
	}
	return true
}

// checkInvocation says what is wrong with one command line: an unknown
// command or verb, or a flag its flag set does not define.
func checkInvocation(inv invocation, flags map[string]map[string]bool, verbs map[string][]string) []string {
	args := inv.args
	if len(args) == 0 || args[0].quoted {
		return nil // `overseer` alone names the program
	}
	first := args[0].text
	switch first {
	case "help", "version", "--version", "-version", "-h", "--help":
		return nil
	}
	if !commandName.MatchString(first) {
		if strings.HasPrefix(first, "-") {
			return []string{fmt.Sprintf("%s:%d: overseer %s: a flag before the command", inv.file, inv.line, first)}
		}
		return nil // not a command line (a placeholder or prose)
	}
	path := first
	rest := args[1:]
	if vs, ok := verbs[first]; ok {
		if len(rest) == 0 || rest[0].text == "-h" || rest[0].text == "--help" || rest[0].text == "help" {
			return nil
		}
		verb := rest[0].text
		_, bare := flags[first] // a command that runs without a verb too (overseer audit)
		switch {
		case contains(vs, verb):
			path, rest = first+" "+verb, rest[1:]
		case bare:
		default:
			if commandName.MatchString(verb) {
				return []string{fmt.Sprintf("%s:%d: overseer %s %s: no such subcommand (it has %s)", inv.file, inv.line, first, verb, strings.Join(vs, ", "))}
			}
			return nil // `overseer model …`, `overseer learn run/schedule`: prose
		}
	}
	known, ok := flags[path]
	if !ok {
		return []string{fmt.Sprintf("%s:%d: overseer %s: no such command", inv.file, inv.line, first)}
	}
	var problems []string
	for _, w := range rest {
		if w.quoted || !strings.HasPrefix(w.text, "-") || w.text == "-" || w.text == "--" {
			continue
		}
		name := strings.TrimLeft(w.text, "-")
		name, _, _ = strings.Cut(name, "=")
		name = strings.TrimRight(name, ":,.;")
		if name == "h" || name == "help" || name == "…" || name == "" {
			continue
		}
		if !known[name] {
			problems = append(problems, fmt.Sprintf("%s:%d: overseer %s: no flag --%s", inv.file, inv.line, path, name))
		}
	}
	return problems
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// docFiles are the documents whose commands are checked: the README and
// every guide under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	return files
}

func commandIndex(t *testing.T) (map[string]map[string]bool, map[string][]string) {
	t.Helper()
	all, err := cli.CommandFlagSets()
	require.NoError(t, err)
	flags := map[string]map[string]bool{}
	verbs := map[string][]string{}
	for _, c := range all {
		set := map[string]bool{}
		for _, f := range c.Flags {
			set[f.Name] = true
		}
		flags[c.Path] = set
		if cmd, verb, ok := strings.Cut(c.Path, " "); ok {
			verbs[cmd] = append(verbs[cmd], verb)
		}
	}
	return flags, verbs
}

// TestDocsCommands fails when README.md or a guide under docs/ shows an
// `overseer …` command line (in a code block or inline code) whose
// command, subcommand or flag the CLI does not have.
func TestDocsCommands(t *testing.T) {
	flags, verbs := commandIndex(t)
	checked := 0
	var problems []string
	for _, path := range docFiles(t) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(repoRoot, path)
		for _, inv := range invocations(rel, string(text)) {
			checked++
			problems = append(problems, checkInvocation(inv, flags, verbs)...)
		}
	}
	assert.Empty(t, problems, "the docs name commands or flags the CLI does not have:\n%s", strings.Join(problems, "\n"))
	assert.Greater(t, checked, 50, "the docs' command lines were not found")
	t.Logf("%d overseer command lines checked", checked)
}

// TestDocsCommandsCheckFails shows that the check refuses what it should.
func TestDocsCommandsCheckFails(t *testing.T) {
	flags, verbs := commandIndex(t)
	doc := "Run `overseer resume ID --by NAME --made-up-flag`.\n\n```sh\n" +
		"overseer start --scenario looping \\\n  --no-such-flag x   # comment --ignored\n" +
		"overseer frobnicate --x\n" +
		"overseer model frob\n" +
		"go run ./cmd/overseer list --paused --bogus=1\n" +
		"overseer resume ID --note \"--not-a-flag\" --by ana\n" +
		"kubectl -n overseer get pods; go install ./cmd/overseer\n" +
		"OVERSEER_JUDGE=jev overseer worker --no-flag\n" +
		"```\n"
	var problems []string
	for _, inv := range invocations("doc.md", doc) {
		problems = append(problems, checkInvocation(inv, flags, verbs)...)
	}
	assert.Equal(t, []string{
		"doc.md:1: overseer resume: no flag --made-up-flag",
		"doc.md:4: overseer start: no flag --no-such-flag",
		"doc.md:6: overseer frobnicate: no such command",
		"doc.md:7: overseer model frob: no such subcommand (it has list, promote, rollback, show)",
		"doc.md:8: overseer list: no flag --bogus",
		"doc.md:11: overseer worker: no flag --no-flag",
	}, problems)
}

// makeTargets are the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9][a-zA-Z0-9_.-]*):`).FindAllStringSubmatch(string(text), -1) {
		targets[m[1]] = true
	}
	return targets
}

// makeInvocations finds every `make TARGET …` in a document's code.
func makeInvocations(text string) [][2]string {
	var found [][2]string
	scan := func(line int, s string) {
		ws := shellWords(s)
		for i, w := range ws {
			if w.quoted || w.text != "make" || !runsProgram(ws[:i]) {
				continue
			}
			for _, arg := range ws[i+1:] {
				if arg.quoted || strings.Contains(arg.text, "=") || strings.HasPrefix(arg.text, "-") {
					continue // VAR=value, -j2
				}
				if commandName.MatchString(arg.text) {
					found = append(found, [2]string{fmt.Sprint(line), arg.text})
				}
			}
			return
		}
	}
	lines := strings.Split(text, "\n")
	inFence := false
	for i, l := range lines {
		if fence.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence {
			scan(i+1, l)
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(l, -1) {
			scan(i+1, m[1])
		}
	}
	return found
}

// TestDocsMakeTargets fails when README.md or a guide shows `make X` for
// a target the Makefile does not have.
func TestDocsMakeTargets(t *testing.T) {
	targets := makeTargets(t)
	require.True(t, targets["lint"] && targets["test"] && targets["demo"], "the Makefile's targets were not found")
	var problems []string
	for _, path := range docFiles(t) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(repoRoot, path)
		for _, m := range makeInvocations(string(text)) {
			if !targets[m[1]] {
				problems = append(problems, fmt.Sprintf("%s:%s: make %s: no such target in the Makefile", rel, m[0], m[1]))
			}
		}
	}
	assert.Empty(t, problems, "\n%s", strings.Join(problems, "\n"))
	assert.Equal(t, []string{"3:no-such-target"}, func() []string {
		var bad []string
		for _, m := range makeInvocations("`make demo`\n```sh\nmake no-such-target TESTFLAGS=-v\n```\n") {
			if !targets[m[1]] {
				bad = append(bad, m[0]+":"+m[1])
			}
		}
		return bad
	}(), "the check refuses a made-up target")
}

// headingAnchors are the GitHub anchors of a Markdown file's headings.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	inFence := false
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		anchors[strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")] = true
	}
	return anchors
}

// TestDocsLinks fails when README.md or a guide links to a file of the
// repository that does not exist, or to a heading a Markdown file does not
// have (a section moved or renamed).
func TestDocsLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeBlock := regexp.MustCompile("(?s)```.*?```")
	var problems []string
	checked := 0
	for _, path := range docFiles(t) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(repoRoot, path)
		prose := codeBlock.ReplaceAllString(string(text), "")
		for _, m := range link.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			resolved := path
			if file != "" {
				resolved = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(resolved); err != nil {
					problems = append(problems, fmt.Sprintf("%s: link %s: no such file", rel, target))
					continue
				}
			}
			if frag != "" && strings.HasSuffix(resolved, ".md") {
				body, err := os.ReadFile(resolved)
				require.NoError(t, err)
				if !headingAnchors(string(body))[frag] {
					problems = append(problems, fmt.Sprintf("%s: link %s: no such heading", rel, target))
				}
			}
		}
	}
	assert.Empty(t, problems, "\n%s", strings.Join(problems, "\n"))
	assert.Greater(t, checked, 30, "the docs' links were not found")
}
