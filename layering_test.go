package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goPackage is what the layering rules read of `go list -json`.
type goPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	CgoFiles   []string
	Deps       []string
	Error      *struct{ Err string }
	DepsErrors []*struct{ Err string }
}

// listPackages runs go list -json with env added to the test's environment.
func listPackages(t *testing.T, env []string, args ...string) []goPackage {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"list", "-json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var pkgs []goPackage
	dec := json.NewDecoder(out)
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NoError(t, cmd.Wait())
	return pkgs
}

const module = "github.com/npud/npud"

func under(p, prefix string) bool {
	return p == module+"/"+prefix || strings.HasPrefix(p, module+"/"+prefix+"/")
}

// apiPackages are the API packages: the ones that declare what their routes
// do (they import wire/route), apart from the daemon, which mounts them. A
// new API is found by the same rule, not by adding it to a list.
func apiPackages(pkgs []goPackage) map[string]bool {
	apis := map[string]bool{}
	for _, p := range pkgs {
		if slices.Contains(p.Imports, module+"/wire/route") && !under(p.ImportPath, "daemon") {
			apis[p.ImportPath] = true
		}
	}
	return apis
}

// The data flows down: APIs → wire → npu; the daemon sits on them, the
// commands people type (cli) on the daemon, and main on top; nothing below
// imports what sits above it; no API imports another. Inside npu, the
// contract (npu itself) is what every side sees; the serving runtime
// (npu/serve) sits on the contract and the leaves beside it (npu/chatfmt,
// the model families; npu/jsonschema, structured output), which import
// nothing of npud's, and only the daemon wires it in, so the APIs, wire and the engines
// reach a stream and the router through the contract's types alone; the
// wire formats (npu/wirefmt) are at the bottom and import nothing of
// npud's above them. These rules keep it so (issues 13, 28 and 36), with
// no exception.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t, nil, "./...")
	require.NotEmpty(t, pkgs)
	apis := apiPackages(pkgs)
	for _, known := range []string{"openaiapi", "ollamaapi", "wsapi", "anthropicapi"} {
		assert.True(t, apis[module+"/"+known], "the rule that finds API packages misses %s", known)
	}
	isAPI := func(p string) bool {
		for api := range apis {
			if p == api || strings.HasPrefix(p, api+"/") {
				return true
			}
		}
		return false
	}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			checkImport(t, p.ImportPath, imp, isAPI)
		}
		// The engine core knows nothing about HTTP; only the network
		// clients talk to the network: the hub client (and the store above
		// it) and the upstream engine (another server's API is its
		// device); the wire formats are HTTP's own (a body's size limit,
		// its status codes).
		if under(p.ImportPath, "npu") && !under(p.ImportPath, "npu/hub") && !under(p.ImportPath, "npu/upstream") &&
			!under(p.ImportPath, "npu/wirefmt") && slices.Contains(p.Imports, "net/http") {
			assert.Failf(t, "npu imports net/http", "%s imports net/http", p.ImportPath)
		}
		if len(p.CgoFiles) > 0 && p.ImportPath != module+"/npu/openvino" {
			assert.Failf(t, "cgo outside npu/openvino", "%s has cgo files %v", p.ImportPath, p.CgoFiles)
		}
	}
}

// checkImport asserts that package p may import imp.
func checkImport(t *testing.T, p, imp string, isAPI func(string) bool) {
	t.Helper()
	own := imp == module || strings.HasPrefix(imp, module+"/")
	switch {
	case under(imp, "daemon") && !under(p, "daemon") && !under(p, "cli") && p != module:
		assert.Failf(t, "imports the daemon", "%s imports %s: only the commands (cli) and main sit above the daemon", p, imp)
	case under(imp, "cli") && !under(p, "cli") && p != module:
		assert.Failf(t, "imports the commands", "%s imports %s: only main sits above the commands", p, imp)
	case (under(p, "wire") || under(p, "npu")) && isAPI(imp):
		assert.Failf(t, "imports an API", "%s imports %s: the APIs sit above it", p, imp)
	case isAPI(p) && isAPI(imp) && !strings.HasPrefix(imp, p+"/") && !strings.HasPrefix(p, imp+"/"):
		assert.Failf(t, "an API imports another", "%s imports %s: what APIs share belongs in wire", p, imp)
	case under(p, "npu") && (under(imp, "wire") || under(imp, "systemd") || under(imp, "packaging")):
		assert.Failf(t, "npu imports upward", "%s imports %s", p, imp)
	case under(imp, "npu/serve") && !under(p, "npu/serve") && !under(p, "daemon"):
		assert.Failf(t, "imports the serving runtime", "%s imports %s: only the daemon wires the runtime in; "+
			"the APIs, wire and the engines see streams and the router through npu's types", p, imp)
	case p == module+"/npu/serve" && own && imp != module+"/npu" && !under(imp, "npu/chatfmt") && !under(imp, "npu/jsonschema"):
		assert.Failf(t, "the runtime imports beside the contract", "%s imports %s: the runtime sits on the contract (npu) and the leaves beside it "+
			"(npu/chatfmt, npu/jsonschema)", p, imp)
	case (under(p, "npu/chatfmt") || under(p, "npu/jsonschema")) && own:
		assert.Failf(t, "a leaf imports npud", "%s imports %s: the leaves (npu/chatfmt, npu/jsonschema) import nothing of npud's, "+
			"so the bridge and the engines can both use them", p, imp)
	case under(p, "npu/wirefmt") && own && !under(imp, "npu/wirefmt"):
		assert.Failf(t, "a wire format imports upward", "%s imports %s: the wire formats are at the bottom", p, imp)
	}
}

// No test helper reaches the binary.
func TestTheBinaryHasNoTestingPackage(t *testing.T) {
	for _, p := range listPackages(t, nil, "-deps", ".") {
		assert.NotEqual(t, "testing", p.ImportPath, "npud links testing")
	}
}

// Without cgo npud has the simulated engine only (npu/openvino's cgo files
// drop out), and it must keep building: the Windows service build and the
// pure-Go packages (npu/modelstore, npud pull) depend on it. make check
// compiles every package in that build; here the binary is linked too,
// except under -short, where go list still checks that every package
// resolves without cgo.
func TestBuildsWithoutCgo(t *testing.T) {
	env := []string{"CGO_ENABLED=0"}
	for _, p := range listPackages(t, env, "-e", "-tags", "nomsgpack", "-deps", ".") {
		if p.Error != nil {
			assert.Failf(t, "does not build without cgo", "%s: %s", p.ImportPath, p.Error.Err)
		}
		assert.Empty(t, p.CgoFiles, "%s has cgo files in a CGO_ENABLED=0 build", p.ImportPath)
	}
	if testing.Short() {
		return
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-tags", "nomsgpack", "-o", filepath.Join(t.TempDir(), "npud"), ".")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "CGO_ENABLED=0 go build: %s", out)
}

var update = flag.Bool("update", false, "rewrite deps.txt with what the binary links now")

// depsBuilds are the builds npud ships: Linux with cgo (make build, the
// packages) and Windows without (packaging/build-windows.sh).
var depsBuilds = []struct{ name, goos, cgo string }{
	{"linux/amd64", "linux", "1"},
	{"windows/amd64", "windows", "0"},
}

// currentDeps lists, per shipped build, the packages the binary links
// besides the standard library and npud's own.
func currentDeps(t *testing.T) []byte {
	var b bytes.Buffer
	b.WriteString("# What the npud binary links besides the standard library and npud's own packages,\n" +
		"# per shipped build (go list -deps -tags nomsgpack .). TestDependencies fails when it\n" +
		"# changes: look at what came in, then update this file with\n" +
		"#   go test -run TestDependencies -update .\n")
	for _, build := range depsBuilds {
		env := []string{"GOOS=" + build.goos, "GOARCH=amd64", "CGO_ENABLED=" + build.cgo}
		var deps []string
		for _, p := range listPackages(t, env, "-tags", "nomsgpack", "-deps", ".") {
			if !p.Standard && p.ImportPath != module && !strings.HasPrefix(p.ImportPath, module+"/") {
				deps = append(deps, p.ImportPath)
			}
		}
		slices.Sort(deps)
		fmt.Fprintf(&b, "\n[%s]\n%s\n", build.name, strings.Join(deps, "\n"))
	}
	return b.Bytes()
}

// A new dependency of the binary is a decision: the record (deps.txt)
// makes it one that shows in review.
func TestDependencies(t *testing.T) {
	now := currentDeps(t)
	if *update {
		require.NoError(t, os.WriteFile("deps.txt", now, 0o644))
		return
	}
	recorded, err := os.ReadFile("deps.txt")
	require.NoError(t, err)
	if !bytes.Equal(recorded, now) {
		assert.Failf(t, "the binary's dependencies changed",
			"deps.txt differs from what npud links now; check what changed, then run\n"+
				"  go test -run TestDependencies -update .\nand commit deps.txt\n\n%s", lineDiff(string(recorded), string(now)))
	}
}

// lineDiff lists the lines only one of a and b has.
func lineDiff(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for _, l := range bs {
		if !slices.Contains(as, l) {
			out.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range as {
		if !slices.Contains(bs, l) {
			out.WriteString("- " + l + "\n")
		}
	}
	return out.String()
}
