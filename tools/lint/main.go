// Command npudlint is npud's linter: go vet's own analyzers and the ones
// .golangci.yml enables (errcheck, errorlint, contextcheck, nilerr,
// bodyclose, noctx, staticcheck, unused, ineffassign), with that file's
// settings and exclusions, in one binary that go vet drives:
//
//	go build -C tools/lint -o /tmp/npudlint . && go vet -vettool=/tmp/npudlint ./...
//
// make check runs it so. golangci-lint runs the same analyzers, but a cold
// build of it from source costs tens of minutes on a small machine; this
// one builds in a few (issue 35). Its own module keeps these dependencies
// out of npud's go.mod; the versions are the ones golangci-lint v2.15.0
// pins, so the two find the same things.
package main

import "golang.org/x/tools/go/analysis/unitchecker"

func main() {
	unitchecker.Main(analyzers()...)
}
