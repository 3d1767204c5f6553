//go:build ignore

// Doccheck reads the comments of every non-test Go file in the repository
// (package docs included) and fails when one of them names the project's
// internal planning documents or a path outside the repository: godoc is
// read by users, who have neither. It prints file:line, what it found and
// what to do instead. make lint runs it:
//
//	go run scripts/doccheck.go [dir ...]
//
// Without arguments it checks the current directory, recursively. It skips
// directories whose names start with "." or "_", vendor and testdata, as
// the go command does, and test files: their comments are not godoc.
package main

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// rule is one thing godoc must not say.
type rule struct {
	re  *regexp.Regexp
	fix string
}

var rules = []rule{
	{
		// The word and its plural, alone or numbered (with "-001"); not
		// longer words that start with it, nor an identifier that ends
		// with it (rngSeed).
		re: regexp.MustCompile(`(?i)\bseeds?\b(-[0-9]+)?`),
		fix: "names the project's internal planning documents, which users do not have: " +
			"say what the code does and why, in the comment itself",
	},
	{
		re: regexp.MustCompile(`(?i)\.\./shared\b|\bshared/(data|traces|supervision)\b|\bdesign\.md\b|\bsupervision-spec(\.md)?\b`),
		fix: "points outside the repository, where users cannot follow: " +
			"describe the behaviour or data here, or name a file inside the repository",
	},
}

type hit struct {
	pos   token.Position
	match string
	fix   string
}

func main() {
	roots := os.Args[1:]
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var (
		hits  []hit
		files int
	)
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "vendor" || name == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			files++
			h, err := check(path)
			hits = append(hits, h...)
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "doccheck:", err)
			os.Exit(2)
		}
	}
	for _, h := range hits {
		fmt.Printf("%s: %q %s\n", h.pos, h.match, h.fix)
	}
	if len(hits) > 0 {
		fmt.Printf("doccheck: %d comment(s) to fix in %d Go files checked\n", len(hits), files)
		os.Exit(1)
	}
	fmt.Printf("doccheck: ok (%d Go files)\n", files)
}

// check returns the rule violations in the comments of one file.
func check(path string) ([]hit, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	file := fset.AddFile(path, -1, len(src))
	var (
		s       scanner.Scanner
		scanErr error
		hits    []hit
	)
	s.Init(file, src, func(pos token.Position, msg string) {
		if scanErr == nil {
			scanErr = fmt.Errorf("%s: %s", pos, msg)
		}
	}, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT {
			continue
		}
		start := fset.Position(pos)
		for i, line := range strings.Split(lit, "\n") {
			for _, r := range rules {
				for _, m := range r.re.FindAllString(line, -1) {
					p := start
					p.Line += i
					p.Column = 0
					hits = append(hits, hit{pos: p, match: m, fix: r.fix})
				}
			}
		}
	}
	return hits, scanErr
}
