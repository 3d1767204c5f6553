package eval

import (
	"path"
	"regexp"
	"strings"
)

// Class is the kind of one agent action, derived from its shell command.
type Class string

// The action classes, from the trace data's README. Their order is their
// precedence when one command does several things (see [Classify]).
const (
	Read      Class = "read"      // search and read: grep, cat, nl, sed -n, ls, find, git diff …
	Reproduce Class = "reproduce" // write, run or remove scratch scripts, or run other programs
	Test      Class = "test"      // run the project's test runner
	Edit      Class = "edit"      // change files of the repository
	Submit    Class = "submit"    // the final submission command
)

var precedence = map[Class]int{Read: 0, Reproduce: 1, Test: 2, Edit: 3, Submit: 4}

// SubmitMarker is the echo with which mini-swe-agent ends a run.
const SubmitMarker = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

// Classifier classifies the actions of one run in order. It remembers the
// scratch scripts the agent wrote, so that running a script that rewrites
// repository files counts as an edit. The zero value is ready to use.
type Classifier struct {
	scripts   map[string]string // scratch file name → content written by a heredoc
	mentioned map[string]bool   // top-level directories named in earlier commands
	scratch   map[string]bool   // top-level directories the agent created
}

// Classify returns the class of one command on its own, without earlier
// actions of the run. Rules, in order of precedence:
//
//   - submit: the command contains [SubmitMarker];
//   - edit: it writes a repository file — sed -i or perl -i on one, a
//     redirection or tee into one, cp, mv, rm or touch of one, patch, git
//     apply, checkout, restore, stash or reset, or a Python script (inline,
//     on stdin or written earlier) that opens a repository path for writing;
//   - test: it runs a test runner (pytest, py.test, tox, nosetests, any
//     runtests.py, bin/test, python -m unittest/doctest, manage.py test,
//     setup.py test);
//   - reproduce: it writes, runs or removes scratch files, or runs any other
//     program (python, sh, pip, sphinx-build …);
//   - read: everything else (grep, cat, nl, sed -n, ls, find, git diff …).
//
// A scratch file is one at the top of the repository (no directory) that is
// not a project file (setup.py, pyproject.toml, conftest.py …), one outside
// it (/tmp …), or, for a [Classifier], one under a top-level directory the
// agent created with mkdir before naming it in any command. A command is
// split into segments at &&, ||, ;, | and new lines (comments and heredoc
// bodies aside); a cd in one segment applies to the following ones; each
// segment is classified and the highest class wins.
func Classify(command string) Class {
	var c Classifier
	return c.Classify(command)
}

// Classify returns the class of the next command of the run.
func (c *Classifier) Classify(command string) Class {
	if strings.Contains(command, SubmitMarker) {
		return Submit
	}
	text, docs := cutHeredocs(command)
	defer c.mention(text)
	best := Read
	cwd := "" // relative to the repository's top
	di := 0
	for _, seg := range splitSegments(text) {
		words := tokenize(seg)
		// The heredocs of this segment, in order.
		var bodies []string
		for range strings.Count(seg, heredocPlaceholder) {
			if di < len(docs) {
				bodies = append(bodies, docs[di])
				di++
			}
		}
		if len(words) >= 1 && words[0] == "cd" {
			cwd = changeDir(cwd, words[1:])
			continue
		}
		if cl := c.segment(words, bodies, cwd); precedence[cl] > precedence[best] {
			best = cl
		}
	}
	return best
}

// changeDir follows a cd; outside the repository the directory is "/".
func changeDir(cwd string, args []string) string {
	if len(args) == 0 {
		return "/"
	}
	dir := args[0]
	switch {
	case dir == "/testbed" || strings.HasPrefix(dir, "/testbed/"):
		return strings.TrimPrefix(path.Clean(strings.TrimPrefix(dir, "/testbed")), "/")
	case strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "~") || strings.HasPrefix(dir, "$") || cwd == "/":
		return "/"
	}
	p := path.Clean(path.Join(cwd, dir))
	if p == "." {
		return ""
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "/"
	}
	return p
}

// heredocPlaceholder stands for a heredoc operator whose body was cut out.
const heredocPlaceholder = "\x00HEREDOC\x00"

var heredocStart = regexp.MustCompile(`<<-?\s*(?:'([^']+)'|"([^"]+)"|\\?([A-Za-z_][A-Za-z0-9_]*))`)

// cutHeredocs removes heredoc bodies from a command, leaving a placeholder
// at each operator, and returns the bodies in order.
func cutHeredocs(command string) (string, []string) {
	lines := strings.Split(command, "\n")
	var out []string
	var docs []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		var ms [][]int
		for _, m := range heredocStart.FindAllStringSubmatchIndex(line, -1) {
			if m[0] == 0 || line[m[0]-1] != '<' { // <<< is a here-string
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			out = append(out, line)
			continue
		}
		var terms []string
		var b strings.Builder
		last := 0
		for _, m := range ms {
			b.WriteString(line[last:m[0]])
			b.WriteString(heredocPlaceholder)
			last = m[1]
			for g := 2; g < len(m); g += 2 {
				if m[g] >= 0 {
					terms = append(terms, line[m[g]:m[g+1]])
					break
				}
			}
		}
		b.WriteString(line[last:])
		out = append(out, b.String())
		for _, term := range terms {
			var body []string
			for i+1 < len(lines) {
				i++
				if strings.TrimSpace(lines[i]) == term {
					break
				}
				body = append(body, lines[i])
			}
			docs = append(docs, strings.Join(body, "\n"))
		}
	}
	return strings.Join(out, "\n"), docs
}

// splitSegments splits a command at &&, ||, ;, | and new lines outside
// quotes, and drops comments.
func splitSegments(text string) []string {
	var segs []string
	var cur strings.Builder
	var quote byte
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			segs = append(segs, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' && i+1 < len(text) {
				cur.WriteByte(ch)
				i++
				ch = text[i]
			}
		case ch == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\n' || text[i-1] == ';'):
			// A comment runs to the end of the line; its quotes mean nothing.
			for i+1 < len(text) && text[i+1] != '\n' {
				i++
			}
			continue
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '\\' && i+1 < len(text):
			cur.WriteByte(ch)
			i++
			ch = text[i]
		case ch == '\n' || ch == ';':
			flush()
			continue
		case ch == '&' || ch == '|':
			if i+1 < len(text) && text[i+1] == ch {
				i++
				flush()
				continue
			}
			if ch == '|' {
				flush()
				continue
			}
			// A lone & (background, or part of 2>&1) stays in the segment.
		}
		cur.WriteByte(ch)
	}
	flush()
	return segs
}

// tokenize splits a segment into shell words: quotes are removed, their
// content kept in one word; redirection operators are words of their own.
func tokenize(seg string) []string {
	var words []string
	var cur strings.Builder
	in := false
	var quote byte
	flush := func() {
		if in {
			words = append(words, cur.String())
		}
		cur.Reset()
		in = false
	}
	for i := 0; i < len(seg); i++ {
		ch := seg[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
				continue
			}
			if ch == '\\' && quote == '"' && i+1 < len(seg) {
				i++
				ch = seg[i]
			}
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == '\\' && i+1 < len(seg):
			i++
			if seg[i] == '\n' { // line continuation
				flush()
				continue
			}
			cur.WriteByte(seg[i])
			in = true
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '>':
			// n>, n>>, >, >>, >| ; n>&m duplicates a descriptor and writes nothing.
			prefix := cur.String()
			if in && strings.Trim(prefix, "0123456789&") != "" {
				flush()
			} else {
				cur.Reset()
				in = false
			}
			op := ">"
			if i+1 < len(seg) && (seg[i+1] == '>' || seg[i+1] == '|') {
				op += string(seg[i+1])
				i++
			}
			if i+1 < len(seg) && seg[i+1] == '&' {
				// Descriptor duplication: skip the operator and its target.
				i++
				for i+1 < len(seg) && seg[i+1] != ' ' {
					i++
				}
				continue
			}
			words = append(words, op)
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	flush()
	return words
}

var (
	envAssign    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	pythonBinary = regexp.MustCompile(`^python[0-9.]*$`)
	// A script writes files when it opens one for writing or writes text.
	writesFiles = regexp.MustCompile(`open\([^\n]*['"](?:w|a|r\+|w\+|wb|a\+)['"]|\.write_text\(|\.write_bytes\(|fileinput\.input\([^\n]*inplace|shutil\.(?:copy|move)`)
	// A repository path in a script: a quoted relative path with a directory.
	repoPathLiteral = regexp.MustCompile(`['"](?:/testbed/|\./)?[\w.-]+(?:/[\w.-]+)+['"]`)
)

// projectFiles are top-level files of a repository, never scratch.
var projectFiles = map[string]bool{
	"setup.py": true, "setup.cfg": true, "pyproject.toml": true, "tox.ini": true, "conftest.py": true,
	"MANIFEST.in": true, "pytest.ini": true, "Makefile": true, "requirements.txt": true,
}

var dirMention = regexp.MustCompile(`(?:^|[\s'"=(:])(?:/testbed/|\./)?([A-Za-z_][\w.-]*)/`)

// mention records the top-level directories a command names.
func (c *Classifier) mention(text string) {
	for _, m := range dirMention.FindAllStringSubmatch(text, -1) {
		if c.mentioned == nil {
			c.mentioned = map[string]bool{}
		}
		c.mentioned[m[1]] = true
	}
}

// created records a directory made by mkdir: its top-level component is
// scratch unless an earlier command named it.
func (c *Classifier) created(dir string) {
	top, _, _ := strings.Cut(path.Clean(strings.TrimPrefix(dir, "/testbed/")), "/")
	if top == "" || top == "." || top == ".." || strings.HasPrefix(dir, "/") && !strings.HasPrefix(dir, "/testbed/") || c.mentioned[top] {
		return
	}
	if c.scratch == nil {
		c.scratch = map[string]bool{}
	}
	c.scratch[top] = true
}

// isScratch reports whether a written path is a scratch file rather than a
// repository file.
func (c *Classifier) isScratch(p string) bool {
	if top, _, ok := strings.Cut(path.Clean(strings.TrimPrefix(p, "/testbed/")), "/"); ok && c.scratch[top] {
		return true
	}
	return isScratch(p)
}

// isScratch is the rule without a run's history.
func isScratch(p string) bool {
	if p == "" || p == "/dev/null" || strings.HasPrefix(p, "/dev/") {
		return true
	}
	p = strings.TrimPrefix(p, "/testbed/")
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") {
		return true // outside the repository (/tmp …)
	}
	p = path.Clean(p)
	if strings.Contains(p, "/") {
		return false
	}
	if projectFiles[p] || strings.HasPrefix(strings.ToUpper(p), "README") || strings.HasPrefix(strings.ToUpper(p), "CHANGE") {
		return false
	}
	return true
}

// segment classifies one simple command run in cwd (relative to the
// repository's top; "/" outside it).
func (c *Classifier) segment(words, bodies []string, cwd string) Class {
	cl := Read
	raise := func(k Class) {
		if precedence[k] > precedence[cl] {
			cl = k
		}
	}
	resolve := func(target string) string {
		if cwd == "" || strings.HasPrefix(target, "/") || strings.HasPrefix(target, "~") || strings.HasPrefix(target, "$") {
			return target
		}
		if cwd == "/" {
			return "/" + target
		}
		return path.Join(cwd, target)
	}
	wrote := func(target string) {
		switch target = resolve(target); {
		case strings.HasPrefix(target, "/dev/"):
		case c.isScratch(target):
			raise(Reproduce)
		default:
			raise(Edit)
		}
	}
	// Redirections first: they write whatever the command is.
	var args []string
	for i := 0; i < len(words); i++ {
		if w := words[i]; w == ">" || w == ">>" || w == ">|" {
			if i+1 < len(words) {
				target := words[i+1]
				wrote(target)
				if len(bodies) > 0 && c.isScratch(resolve(target)) {
					c.remember(resolve(target), bodies[0])
				}
				i++
			}
			continue
		}
		args = append(args, words[i])
	}
	args = stripWrappers(args)
	if len(args) == 0 {
		return cl
	}
	name := path.Base(args[0])
	rest := args[1:]
	switch {
	case name == "sed" || name == "perl":
		if inPlace(rest) {
			for _, f := range fileArgs(rest, name) {
				wrote(f)
			}
		}
	case name == "tee":
		for _, f := range rest {
			if !strings.HasPrefix(f, "-") {
				wrote(f)
			}
		}
	case name == "cp" || name == "mv" || name == "rm" || name == "touch" || name == "mkdir" || name == "ln":
		files := nonFlags(rest)
		if name == "mkdir" {
			for _, f := range files {
				c.created(resolve(f))
			}
		}
		if name == "cp" || name == "ln" {
			if len(files) > 0 {
				files = files[len(files)-1:] // only the destination changes
			}
		}
		for _, f := range files {
			wrote(f)
		}
	case name == "patch":
		raise(Edit)
	case name == "git":
		if len(rest) > 0 {
			switch rest[0] {
			case "apply", "checkout", "restore", "stash", "reset", "am", "revert", "cherry-pick", "mv", "rm":
				raise(Edit)
			}
		}
	case isTestRunner(args[0], rest):
		raise(Test)
	case pythonBinary.MatchString(name):
		raise(c.python(rest, bodies))
	case name == "sh" || name == "bash":
		raise(c.script(firstNonFlag(rest), bodies))
	case readCommands[name]:
	case strings.HasPrefix(args[0], "./") || strings.HasSuffix(name, ".sh"):
		raise(c.script(args[0], bodies))
	default:
		raise(Reproduce)
	}
	return cl
}

// stripWrappers drops environment assignments and wrappers (timeout N,
// time, env, sudo, nohup, exec) before the command's name.
func stripWrappers(args []string) []string {
	for len(args) > 0 {
		switch a := args[0]; {
		case envAssign.MatchString(a):
			args = args[1:]
		case a == "timeout" && len(args) > 1:
			args = args[2:]
		case a == "time" || a == "env" || a == "sudo" || a == "nohup" || a == "exec":
			args = args[1:]
		default:
			return args
		}
	}
	return args
}

// readCommands only read, list or print (without a redirection).
var readCommands = map[string]bool{
	"cat": true, "nl": true, "grep": true, "egrep": true, "fgrep": true, "rg": true, "ls": true, "find": true,
	"head": true, "tail": true, "wc": true, "sed": true, "awk": true, "sort": true, "uniq": true, "cut": true,
	"tr": true, "xargs": true, "echo": true, "printf": true, "pwd": true, "which": true, "cd": true,
	"export": true, "diff": true, "file": true, "stat": true, "tree": true, "less": true, "more": true,
	"true": true, "false": true, "test": true, "[": true, "type": true, "whoami": true, "date": true,
	"env": true, "set": true, "unset": true, "source": true, ".": true, "#": true, "du": true, "realpath": true,
	"dirname": true, "basename": true, "readlink": true, "column": true, "od": true, "hexdump": true, "xxd": true,
	"cmp": true, "md5sum": true, "sha256sum": true, "jq": true, "git": true,
}

func inPlace(args []string) bool {
	for _, a := range args {
		if a == "--in-place" || strings.HasPrefix(a, "--in-place=") {
			return true
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "i") {
			return true
		}
	}
	return false
}

// fileArgs returns the file operands of sed or perl: every operand after
// the script (the first operand unless -e or -f gave it).
func fileArgs(args []string, name string) []string {
	var files []string
	scriptGiven := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if a == "-e" || a == "-f" || a == "--expression" || a == "--file" {
				scriptGiven = true
				i++
			} else if name == "perl" && strings.HasSuffix(a, "e") {
				scriptGiven = true
				i++
			}
			continue
		}
		if !scriptGiven {
			scriptGiven = true
			continue
		}
		files = append(files, a)
	}
	return files
}

func nonFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

func firstNonFlag(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// isTestRunner reports whether a command runs the project's tests.
func isTestRunner(arg0 string, rest []string) bool {
	name := path.Base(arg0)
	switch {
	case name == "pytest" || name == "py.test" || name == "tox" || name == "nosetests" || name == "runtests.py":
		return true
	case name == "test":
		return strings.Contains(arg0, "/") // bin/test; a bare test is the shell's
	case !pythonBinary.MatchString(name):
		return false
	}
	for i, a := range rest {
		if a == "-m" {
			if i+1 < len(rest) {
				switch rest[i+1] {
				case "pytest", "py.test", "unittest", "doctest", "tox", "nose":
					return true
				}
			}
			return false
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		switch base := path.Base(a); {
		case base == "runtests.py" || base == "pytest":
			return true
		case base == "manage.py" || base == "setup.py":
			return i+1 < len(rest) && rest[i+1] == "test"
		default:
			return base == "test" && strings.Contains(a, "/")
		}
	}
	return false
}

// python classifies running Python: a test runner was handled before; a
// script (inline with -c, on stdin, or a file written earlier) that writes
// repository files is an edit; anything else reproduces.
func (c *Classifier) python(rest, bodies []string) Class {
	for i, a := range rest {
		switch {
		case a == "-c":
			if i+1 < len(rest) {
				return scriptClass(rest[i+1])
			}
			return Reproduce
		case a == "-m":
			return Reproduce
		case a == "-" || a == heredocPlaceholder:
			return c.script("", bodies)
		case strings.HasPrefix(a, "-"):
			continue
		default:
			return c.script(a, bodies)
		}
	}
	return c.script("", bodies) // python <<EOF, or python reading stdin
}

// script classifies running a script file.
func (c *Classifier) script(file string, bodies []string) Class {
	if file == "" || file == heredocPlaceholder {
		if len(bodies) > 0 {
			return scriptClass(bodies[0])
		}
		return Reproduce
	}
	if body, ok := c.scripts[path.Clean(strings.TrimPrefix(file, "/testbed/"))]; ok {
		return scriptClass(body)
	}
	if base := path.Base(file); base == "test" || strings.HasPrefix(base, "runtests") {
		return Test
	}
	return Reproduce
}

func scriptClass(body string) Class {
	if writesFiles.MatchString(body) && repoPathLiteral.MatchString(body) {
		return Edit
	}
	return Reproduce
}

func (c *Classifier) remember(file, body string) {
	if c.scripts == nil {
		c.scripts = map[string]string{}
	}
	c.scripts[path.Clean(strings.TrimPrefix(file, "/testbed/"))] = body
}
