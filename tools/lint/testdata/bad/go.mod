// Code that each of npudlint's linters finds fault with, one package a
// linter, each finding marked `// want "regexp"` (lint_test.go). The path
// is under npud's module, as contextcheck looks at npud's code only.
module github.com/npud/npud/lintbad

go 1.26.0
