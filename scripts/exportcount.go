//go:build ignore

// Command exportcount prints, for each package directory given, its
// exported names per 1,000 lines of non-test Go code: exported top-level
// constants, variables, types and functions, plus the exported methods of
// exported types (methods of unexported types are not part of the
// surface). The "+methods" figure is the one to keep at 35 or under for
// the plugin's packages:
//
//	go run scripts/exportcount.go overseer supervision
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	for _, dir := range os.Args[1:] {
		fset := token.NewFileSet()
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		names, methods, lines := 0, 0, 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, _ := os.ReadFile(f)
			lines += strings.Count(string(src), "\n")
			af, err := parser.ParseFile(fset, f, src, 0)
			if err != nil {
				panic(err)
			}
			for _, d := range af.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Name.IsExported() {
						if d.Recv == nil {
							names++
						} else if recvExported(d.Recv) {
							methods++ // methods of unexported types are not part of the surface
						}
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								names++
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									names++
								}
							}
						}
					}
				}
			}
		}
		fmt.Printf("%-28s lines %5d  top-level exported %3d (%.1f/kloc)  +methods %3d (%.1f/kloc)\n", dir, lines, names, 1000*float64(names)/float64(lines), methods, 1000*float64(names+methods)/float64(lines))
	}
}

func recvExported(r *ast.FieldList) bool {
	t := r.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
