//go:build cgo

package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// Issue 14: with no flag and no environment, the system loader's path
// finds the library (LD_LIBRARY_PATH is read when a process starts, so
// this runs the binary).
func TestDoctorFindsTheLibraryOnTheLoaderPath(t *testing.T) {
	lib := daemontest.TestLibrary(t)
	bin := daemontest.BuildNPUD(t)
	models := t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	for _, f := range []string{"openvino_model.bin", "openvino_tokenizer.xml", "openvino_detokenizer.xml"} {
		require.NoError(t, os.WriteFile(models+"/tiny/"+f, []byte("x"), 0o644))
	}
	cmd := exec.Command(bin, "doctor", "--json", "--models-dir", models, "--cache-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib, "OpenVINO_DIR=", "INTEL_OPENVINO_DIR=", "VIRTUAL_ENV=")
	stdout, err := cmd.Output()
	require.NoError(t, err, "exit 0: ready; %s", stdout)
	var r struct {
		Ready   bool
		Library struct{ Path, Source string }
	}
	require.NoError(t, json.Unmarshal(stdout, &r))
	assert.True(t, r.Ready)
	assert.Equal(t, "system", r.Library.Source)
	assert.Equal(t, "libopenvino_genai_c.so", r.Library.Path, "found by name, through the loader")
}
