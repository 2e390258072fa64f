package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goPackage is what the layering rules read of `go list -json`.
type goPackage struct {
	ImportPath string
	Imports    []string
	CgoFiles   []string
	Deps       []string
}

func listPackages(t *testing.T, args ...string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
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

// The data flows down: APIs → wire → npu; the daemon sits on top and
// nothing imports it. These rules keep it so (issue 13).
func TestLayering(t *testing.T) {
	pkgs := listPackages(t, "-tags", "openvino", "./...")
	require.NotEmpty(t, pkgs)
	under := func(p, prefix string) bool {
		return p == module+"/"+prefix || strings.HasPrefix(p, module+"/"+prefix+"/")
	}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if under(imp, "daemon") && !under(p.ImportPath, "daemon") && p.ImportPath != module {
				assert.Failf(t, "imports the daemon", "%s imports %s: only main sits above the daemon", p.ImportPath, imp)
			}
			if (under(p.ImportPath, "wire") || under(p.ImportPath, "npu")) && (under(imp, "openaiapi") || under(imp, "ollamaapi") || under(imp, "anthropicapi") || under(imp, "wsapi")) {
				assert.Failf(t, "imports an API", "%s imports %s: the APIs sit above it", p.ImportPath, imp)
			}
			if under(p.ImportPath, "anthropicapi") && (under(imp, "openaiapi") || under(imp, "ollamaapi") || under(imp, "wsapi")) {
				assert.Failf(t, "APIs import each other", "%s imports %s: the Messages API shares only wire and npu", p.ImportPath, imp)
			}
			if under(p.ImportPath, "npu") && (under(imp, "wire") || under(imp, "systemd") || under(imp, "packaging")) {
				assert.Failf(t, "npu imports upward", "%s imports %s", p.ImportPath, imp)
			}
		}
		// The engine core knows nothing about HTTP; only the network
		// clients talk to the network: the hub client (and the store above
		// it), and the upstream engine (another server's API is its device).
		if under(p.ImportPath, "npu") && !under(p.ImportPath, "npu/hub") && !under(p.ImportPath, "npu/upstream") &&
			slices.Contains(p.Imports, "net/http") {
			assert.Failf(t, "npu imports net/http", "%s imports net/http", p.ImportPath)
		}
		if len(p.CgoFiles) > 0 && p.ImportPath != module+"/npu/openvino" {
			assert.Failf(t, "cgo outside npu/openvino", "%s has cgo files %v", p.ImportPath, p.CgoFiles)
		}
	}
}

// No test helper reaches the binary.
func TestTheBinaryHasNoTestingPackage(t *testing.T) {
	for _, tags := range []string{"", "openvino"} {
		pkgs := listPackages(t, "-tags", tags, "-deps", ".")
		for _, p := range pkgs {
			assert.NotEqual(t, "testing", p.ImportPath, "npud (tags %q) links testing", tags)
		}
	}
}
