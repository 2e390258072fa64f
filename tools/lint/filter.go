package main

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// excluding wraps an analyzer of the named linter so that it reports only
// what golangci-lint would: nothing in generated files, nothing a
// //nolint comment covers, nothing an exclusion rule drops.
func excluding(linter string, a *analysis.Analyzer) *analysis.Analyzer {
	w := *a
	w.Run = func(pass *analysis.Pass) (any, error) {
		files := map[string]*sourceFile{}
		for _, f := range pass.Files {
			name := pass.Fset.File(f.Pos()).Name()
			src, _ := os.ReadFile(name) // unreadable: no line to match, no //nolint
			files[name] = &sourceFile{
				generated: ast.IsGenerated(f),
				lines:     strings.Split(string(src), "\n"),
				quiet:     nolintRanges(pass.Fset, f, src),
			}
		}
		inner := *pass
		inner.Report = func(d analysis.Diagnostic) {
			pos := pass.Fset.Position(d.Pos)
			sf := files[pos.Filename]
			if sf == nil {
				pass.Report(d) // outside the package's files (cgo's): nothing to exclude by
				return
			}
			if sf.generated || sf.quieted(linter, pos.Line) {
				return
			}
			var line string
			if pos.Line >= 1 && pos.Line <= len(sf.lines) {
				line = sf.lines[pos.Line-1]
			}
			file := filepath.ToSlash(pos.Filename)
			for _, e := range exclusions {
				if e.drops(linter, file, d.Message, line) {
					return
				}
			}
			pass.Report(d)
		}
		return a.Run(&inner)
	}
	return &w
}

// sourceFile is what the exclusions read of one file of the package.
type sourceFile struct {
	generated bool
	lines     []string
	quiet     []nolintRange
}

func (sf *sourceFile) quieted(linter string, line int) bool {
	for _, q := range sf.quiet {
		if q.from <= line && line <= q.to && (q.all || slices.Contains(q.names, linter)) {
			return true
		}
	}
	return false
}

// nolintRange is the lines a //nolint comment covers and the linters it
// names (every one when all).
type nolintRange struct {
	from, to int
	all      bool
	names    []string
}

// nolintRanges finds a file's //nolint comments as golangci-lint reads
// them: one after code covers its line; one on a line of its own covers
// the statement or declaration that starts on the next line, whole.
func nolintRanges(fset *token.FileSet, f *ast.File, src []byte) []nolintRange {
	tf := fset.File(f.Pos())
	var ranges []nolintRange
	for _, group := range f.Comments {
		for _, c := range group.List {
			all, names := nolint(c.Text)
			if !all && names == nil {
				continue
			}
			line := tf.Line(c.Slash)
			r := nolintRange{from: line, to: line, all: all, names: names}
			start, at := tf.Offset(tf.LineStart(line)), tf.Offset(c.Slash)
			if start <= at && at <= len(src) && strings.TrimSpace(string(src[start:at])) == "" {
				r.from, r.to = line+1, line+1
				ast.Inspect(f, func(n ast.Node) bool {
					if n == nil {
						return false
					}
					first, last := tf.Line(n.Pos()), tf.Line(n.End())
					if first == line+1 {
						r.to = max(r.to, last)
						return false
					}
					return first <= line+1 && line+1 <= last
				})
			}
			ranges = append(ranges, r)
		}
	}
	return ranges
}
