package main

import (
	"cmp"
	"fmt"
	"go/token"
	"regexp"
	"slices"
	"strings"

	"codeberg.org/polyfloyd/go-errorlint/errorlint"
	"github.com/gordonklaus/ineffassign/pkg/ineffassign"
	"github.com/gostaticanalysis/nilerr"
	"github.com/kisielk/errcheck/errcheck"
	"github.com/kkHAIKE/contextcheck"
	"github.com/sonatard/noctx"
	"github.com/timakin/bodyclose/passes/bodyclose"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/appends"
	"golang.org/x/tools/go/analysis/passes/asmdecl"
	"golang.org/x/tools/go/analysis/passes/assign"
	"golang.org/x/tools/go/analysis/passes/atomic"
	"golang.org/x/tools/go/analysis/passes/bools"
	"golang.org/x/tools/go/analysis/passes/buildtag"
	"golang.org/x/tools/go/analysis/passes/cgocall"
	"golang.org/x/tools/go/analysis/passes/composite"
	"golang.org/x/tools/go/analysis/passes/copylock"
	"golang.org/x/tools/go/analysis/passes/defers"
	"golang.org/x/tools/go/analysis/passes/directive"
	"golang.org/x/tools/go/analysis/passes/errorsas"
	"golang.org/x/tools/go/analysis/passes/framepointer"
	"golang.org/x/tools/go/analysis/passes/hostport"
	"golang.org/x/tools/go/analysis/passes/httpresponse"
	"golang.org/x/tools/go/analysis/passes/ifaceassert"
	"golang.org/x/tools/go/analysis/passes/loopclosure"
	"golang.org/x/tools/go/analysis/passes/lostcancel"
	"golang.org/x/tools/go/analysis/passes/nilfunc"
	"golang.org/x/tools/go/analysis/passes/printf"
	"golang.org/x/tools/go/analysis/passes/shift"
	"golang.org/x/tools/go/analysis/passes/sigchanyzer"
	"golang.org/x/tools/go/analysis/passes/slog"
	"golang.org/x/tools/go/analysis/passes/stdmethods"
	"golang.org/x/tools/go/analysis/passes/stdversion"
	"golang.org/x/tools/go/analysis/passes/stringintconv"
	"golang.org/x/tools/go/analysis/passes/structtag"
	"golang.org/x/tools/go/analysis/passes/testinggoroutine"
	"golang.org/x/tools/go/analysis/passes/tests"
	"golang.org/x/tools/go/analysis/passes/timeformat"
	"golang.org/x/tools/go/analysis/passes/unmarshal"
	"golang.org/x/tools/go/analysis/passes/unreachable"
	"golang.org/x/tools/go/analysis/passes/unsafeptr"
	"golang.org/x/tools/go/analysis/passes/unusedresult"
	"golang.org/x/tools/go/analysis/passes/waitgroup"
	"golang.org/x/tools/go/packages"
	"honnef.co/go/tools/analysis/lint"
	"honnef.co/go/tools/simple"
	"honnef.co/go/tools/staticcheck"
	"honnef.co/go/tools/stylecheck"
	"honnef.co/go/tools/unused"
)

// vetSuite is what `go vet` runs (cmd/vet/main.go of Go 1.26): the
// govet linter of .golangci.yml, run here so the tree is vetted once.
var vetSuite = []*analysis.Analyzer{
	appends.Analyzer, asmdecl.Analyzer, assign.Analyzer, atomic.Analyzer, bools.Analyzer,
	buildtag.Analyzer, cgocall.Analyzer, composite.Analyzer, copylock.Analyzer, defers.Analyzer,
	directive.Analyzer, errorsas.Analyzer, framepointer.Analyzer, httpresponse.Analyzer,
	hostport.Analyzer, ifaceassert.Analyzer, loopclosure.Analyzer, lostcancel.Analyzer,
	nilfunc.Analyzer, printf.Analyzer, shift.Analyzer, sigchanyzer.Analyzer, slog.Analyzer,
	stdmethods.Analyzer, stdversion.Analyzer, stringintconv.Analyzer, structtag.Analyzer,
	tests.Analyzer, testinggoroutine.Analyzer, timeformat.Analyzer, unmarshal.Analyzer,
	unreachable.Analyzer, unsafeptr.Analyzer, unusedresult.Analyzer, waitgroup.Analyzer,
}

// staticcheckOff are the checks .golangci.yml's staticcheck settings turn
// off besides the quick fixes (QF*, not built in at all).
var staticcheckOff = []string{"ST1000", "ST1003", "ST1005", "ST1020", "ST1021", "ST1022"}

// errcheckExcluded are .golangci.yml's errcheck exclude-functions, on top
// of errcheck's defaults.
var errcheckExcluded = []string{
	// Printing a command's output or usage: nothing to do if that fails.
	"fmt.Fprint", "fmt.Fprintf", "fmt.Fprintln",
	// A response body's Close: the body was read (or abandoned) already.
	"(io.ReadCloser).Close",
}

// linter is one of .golangci.yml's linters: its name (what //nolint
// comments name) and the analyzers that make it up.
type linter struct {
	name      string
	analyzers []*analysis.Analyzer
}

// linters are the linters make check runs, in .golangci.yml's order.
func linters() []linter {
	var sc []*analysis.Analyzer
	for _, set := range [][]*lint.Analyzer{staticcheck.Analyzers, simple.Analyzers, stylecheck.Analyzers} {
		for _, a := range set {
			if !slices.Contains(staticcheckOff, a.Analyzer.Name) {
				sc = append(sc, a.Analyzer)
			}
		}
	}
	return []linter{
		{"bodyclose", []*analysis.Analyzer{bodyclose.Analyzer}},
		{"contextcheck", []*analysis.Analyzer{contextChecker()}},
		{"errcheck", []*analysis.Analyzer{errcheckAnalyzer}},
		{"errorlint", []*analysis.Analyzer{errorLinter()}},
		{"govet", vetSuite},
		{"ineffassign", []*analysis.Analyzer{ineffassign.Analyzer}},
		{"nilerr", []*analysis.Analyzer{nilerr.Analyzer}},
		{"noctx", []*analysis.Analyzer{noctx.Analyzer}},
		{"staticcheck", sc},
		{"unused", []*analysis.Analyzer{unusedAnalyzer}},
	}
}

// analyzers are every linter's analyzers, each behind the exclusions.
func analyzers() []*analysis.Analyzer {
	var all []*analysis.Analyzer
	for _, l := range linters() {
		for _, a := range l.analyzers {
			all = append(all, excluding(l.name, a))
		}
	}
	return all
}

// contextChecker looks at npud's own functions only, as golangci-lint
// runs it (on the packages of the repository linted): a call into the
// standard library that starts from context.Background inside is not a
// context dropped by npud.
func contextChecker() *analysis.Analyzer {
	a := contextcheck.NewAnalyzer(contextcheck.Configuration{})
	if err := a.Flags.Set("pkgprefix", module); err != nil {
		panic(err) // the flag is contextcheck's own; without it this build is wrong
	}
	return a
}

// errorLinter checks fmt.Errorf's verbs too, as golangci-lint's errorlint
// does by default (errorlint's own default leaves them).
func errorLinter() *analysis.Analyzer {
	a := errorlint.NewAnalyzer()
	if err := a.Flags.Set("errorf", "true"); err != nil {
		panic(err) // the flag is errorlint's own; without it this build is wrong
	}
	return a
}

// module is npud's module path.
const module = "github.com/npud/npud"

// errcheckAnalyzer reports errors dropped on the floor, naming the call as
// golangci-lint does ("Error return value of `f.Close` is not checked"),
// which the exclusions match. errcheck's own analyzer says only "unchecked
// error" and takes its exclusions from a file.
var errcheckAnalyzer = &analysis.Analyzer{
	Name: "errcheck",
	Doc:  "check for unchecked errors",
	Run: func(pass *analysis.Pass) (any, error) {
		checker := errcheck.Checker{Exclusions: errcheck.Exclusions{
			BlankAssignments: true, TypeAssertions: true,
			Symbols: slices.Concat(errcheck.DefaultExcludedSymbols, errcheckExcluded),
		}}
		res := checker.CheckPackage(&packages.Package{Fset: pass.Fset, Syntax: pass.Files, Types: pass.Pkg, TypesInfo: pass.TypesInfo}).Unique()
		for _, e := range res.UncheckedErrors {
			msg := "Error return value is not checked"
			if e.FuncName != "" {
				msg = fmt.Sprintf("Error return value of `%s` is not checked", cmp.Or(e.SelectorName, e.FuncName))
			}
			if pos := posOf(pass, e.Pos); pos.IsValid() {
				pass.Report(analysis.Diagnostic{Pos: pos, Message: msg})
			}
		}
		return nil, nil
	},
}

// unusedAnalyzer reports what staticcheck's unused finds unused; its
// analyzer only returns the objects.
var unusedAnalyzer = &analysis.Analyzer{
	Name:     "unused",
	Doc:      "report unused constants, variables, functions and types",
	Requires: []*analysis.Analyzer{unused.Analyzer.Analyzer},
	Run: func(pass *analysis.Pass) (any, error) {
		res := pass.ResultOf[unused.Analyzer.Analyzer].(unused.Result)
		for _, o := range res.Unused {
			if o.Kind == "type param" {
				continue
			}
			if pos := posOf(pass, o.DisplayPosition); pos.IsValid() {
				pass.Report(analysis.Diagnostic{Pos: pos, Message: fmt.Sprintf("%s %s is unused", o.Kind, o.Name)})
			}
		}
		return nil, nil
	},
}

// posOf finds a file position among the pass's files.
func posOf(pass *analysis.Pass, p token.Position) token.Pos {
	for _, f := range pass.Files {
		tf := pass.Fset.File(f.Pos())
		if tf == nil || tf.Name() != p.Filename || p.Line < 1 || p.Line > tf.LineCount() {
			continue
		}
		return tf.LineStart(p.Line) + token.Pos(max(p.Column-1, 0))
	}
	return token.NoPos
}

// exclusion is one of .golangci.yml's exclusion rules: a diagnostic of
// the linter (every linter when empty) in a file whose slash path matches
// path, whose message matches text and whose line matches source, is
// dropped. An empty pattern matches everything.
type exclusion struct {
	linter             string
	path, text, source *regexp.Regexp
}

var exclusions = []exclusion{
	// Tests assert what matters; their helpers and the examples close what
	// they opened in defers.
	{linter: "errcheck", path: regexp.MustCompile(`_test\.go$`)},
	{linter: "errcheck", path: regexp.MustCompile(`/(daemon/daemontest|docs/examples)/`), text: regexp.MustCompile(`Close|CloseNow`)},
	// coder/websocket closes the handshake response's body itself ("You
	// never need to close resp.Body yourself", its Dial's documentation).
	{linter: "bodyclose", source: regexp.MustCompile(`websocket\.Dial\(`)},
}

func (e exclusion) drops(linter, file, msg, line string) bool {
	match := func(re *regexp.Regexp, s string) bool { return re == nil || re.MatchString(s) }
	return (e.linter == "" || e.linter == linter) && match(e.path, file) && match(e.text, msg) && match(e.source, line)
}

// nolint reads a //nolint comment's linters: all of them for a bare
// //nolint, none for another comment.
func nolint(comment string) (all bool, names []string) {
	rest, ok := strings.CutPrefix(comment, "//nolint")
	if !ok {
		return false, nil
	}
	if !strings.HasPrefix(rest, ":") {
		return true, nil
	}
	list, _, _ := strings.Cut(rest[1:], " ")
	return false, strings.Split(list, ",")
}
