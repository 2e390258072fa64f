//go:build cgo

package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// Issue 26 item 3: npud doctor where "pip install openvino-genai" was done
// (the official wheels, in the virtual environment make test creates):
// the runtime's real version and devices, and exactly what is missing for
// the engine (GenAI's C library, in no wheel) and how to get it.
func TestOfficialDoctorInPipEnvironment(t *testing.T) {
	venv := os.Getenv("NPUD_OPENVINO_VENV")
	switch {
	case venv == "":
		t.Skip("NPUD_OPENVINO_VENV is not set: the checks against the official OpenVINO wheels run in make test")
	case runtime.GOOS != "linux":
		t.Skip("the wheels' layout checked here is Linux's")
	case raceEnabled:
		t.Skip("the official runtime's tests run without -race (make test does; see npu/openvino/official_test.go)")
	}
	models := t.TempDir()
	ovtestlib.WriteModel(t, models, "m")
	getenv := func(k string) string {
		if k == "VIRTUAL_ENV" {
			return venv
		}
		return ""
	}
	code, r, text := runDoctor(t, getenv,
		"--models-dir", models, "--cache-dir", t.TempDir(), "--listen", freeAddr(t))

	assert.Equal(t, 1, code, "not ready: no GenAI C library")
	assert.False(t, r.Ready)
	rt := check(r, "openvino runtime")
	assert.Equal(t, checkOK, rt.Status)
	assert.Contains(t, rt.Detail, "OpenVINO 2026.4.1-")
	assert.Contains(t, rt.Detail, filepath.Join("site-packages", "openvino", "libs", "libopenvino_c.so.2641"))
	lib := check(r, "openvino library")
	assert.Equal(t, checkFail, lib.Status)
	assert.Contains(t, lib.Detail, "OpenVINO 2026.4.1 is installed")
	assert.Contains(t, lib.Detail, "GenAI's C library is not")
	assert.Contains(t, lib.Fix, "libopenvino_genai_c")
	assert.Contains(t, lib.Fix, "archive")
	assert.Contains(t, lib.Fix, "--openvino-lib")
	names := []string{}
	for _, d := range r.Devices {
		names = append(names, d.Name)
		if d.Name == "CPU" {
			assert.NotEmpty(t, d.FullName)
		}
	}
	assert.Contains(t, names, "CPU")
	assert.Contains(t, check(r, "devices").Detail, "CPU (")
	if strings.HasPrefix(venv, "/tmp/") || strings.HasPrefix(venv, "/home/") || strings.HasPrefix(venv, "/root/") {
		assert.Equal(t, checkWarn, check(r, "service can load openvino").Status, "a venv the service cannot see")
	}
	assert.True(t, strings.Contains(text, "GenAI's C library"), "the text report says it too:\n%s", text)
}
