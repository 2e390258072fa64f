//go:build cgo

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// Issue 38.9: with GenAI's C library where its tokenizers library is not
// beside it, GenAI fails every pipeline, and doctor said "ready". Now
// doctor finds the tokenizers where discovery finds the core (here the
// loader's path), and says ready only when they load as GenAI loads them;
// nowhere, or a file that does not load, is a failed check and exit 1.
func TestDoctorReadyMeansTheTokenizersLoad(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	t.Setenv("OVTEST_DEVICES", "CPU")
	t.Setenv("OPENVINO_TOKENIZERS_PATH_GENAI", "")
	alone, tokDir := ovtestlib.SplitTokenizers(t, lib)
	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, "libopenvino_tokenizers.so"), []byte("not a library"), 0o644))
	models := t.TempDir()
	ovtestlib.WriteModel(t, models, "tiny")
	args := func(libDir string) []string {
		return []string{"--openvino-lib", libDir, "--models-dir", models, "--cache-dir", filepath.Join(t.TempDir(), "cache"), "--listen", freeAddr(t)}
	}
	for _, tc := range []struct {
		name      string
		libDir    string
		ldPath    string
		wantCode  int
		status    string
		detailHas string
	}{
		{"beside GenAI's library", lib, "", 0, checkOK, "beside GenAI's library"},
		{"on the loader's path", alone, tokDir, 0, checkOK, filepath.Join(tokDir, "libopenvino_tokenizers.so")},
		{"nowhere", alone, "", 1, checkFail, "the openvino-tokenizers library was not found"},
		{"a file that does not load", alone, broken, 1, checkFail, "Cannot load library"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r, text := runDoctor(t, env("INTEL_OPENVINO_DIR", t.TempDir(), "LD_LIBRARY_PATH", tc.ldPath), args(tc.libDir)...)
			c := check(r, "tokenizers")
			if tc.name == "nowhere" && c.Status == checkOK {
				t.Skip("this machine has openvino-tokenizers installed where discovery finds it: " + c.Detail)
			}
			assert.Equal(t, tc.wantCode, code, text)
			assert.Equal(t, tc.wantCode == 0, r.Ready)
			assert.Equal(t, tc.status, c.Status, "%+v", r.Checks)
			assert.Contains(t, c.Detail, tc.detailHas)
			if tc.status == checkFail {
				assert.Contains(t, c.Fix, "openvino-tokenizers")
				assert.Contains(t, text, "not ready")
			}
		})
	}
}

// Issue 38.10: doctor loads OpenVINO in a child process, as the daemon
// runs engines in workers: a native crash there (here the test library
// crashing while it lists the devices) is a failed check that says how the
// probe ended, and doctor still reports everything else and exits 1.
func TestDoctorProbeCrashIsAFailedCheck(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	models := t.TempDir()
	ovtestlib.WriteModel(t, models, "tiny")
	t.Setenv("OVTEST_CRASH_LISTING", "1")
	code, r, text := runDoctor(t, env("INTEL_OPENVINO_DIR", t.TempDir()), "--openvino-lib", lib, "--models-dir", models,
		"--cache-dir", filepath.Join(t.TempDir(), "cache"), "--listen", freeAddr(t))
	assert.Equal(t, 1, code, text)
	assert.False(t, r.Ready)
	c := check(r, "openvino probe")
	assert.Equal(t, checkFail, c.Status, "%+v", r.Checks)
	assert.Regexp(t, `SIGSEGV|segmentation`, c.Detail, "it says how the probe ended")
	assert.NotEmpty(t, c.Fix)
	assert.Equal(t, checkOK, check(r, "model tiny").Status, "the rest is still examined")
	assert.Contains(t, text, "not ready")
}
