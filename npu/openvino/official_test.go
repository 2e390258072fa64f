//go:build cgo

package openvino

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// EnvOpenVINOVenv names a Python virtual environment holding the pinned
// official OpenVINO wheels (make test creates it: see the Makefile's
// openvino-venv). The tests against the real runtime skip without it, so
// that go test -short ./... needs no network.
const EnvOpenVINOVenv = "NPUD_OPENVINO_VENV"

// realVenv returns the virtual environment and its site-packages, or
// skips the test.
func realVenv(t testing.TB) (venv, site string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the tests against the official OpenVINO runtime are integration tests: not with -short")
	}
	venv = os.Getenv(EnvOpenVINOVenv)
	if venv == "" {
		t.Skipf("%s is not set: the tests against the official OpenVINO wheels run in make test (make openvino-venv)", EnvOpenVINOVenv)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the wheels' layout checked here is Linux's")
	}
	if raceEnabled {
		// Seen here: with the CPU plugin loaded, a -race binary now and
		// then dies in the Go runtime (SIGSEGV in runtime.futexwakeup from
		// a corrupt M); without -race never in 40 runs. make test runs
		// these tests on their own, without -race.
		t.Skip("the official runtime's tests run without -race (make test does)")
	}
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	require.Len(t, sites, 1, "one site-packages in %s", venv)
	return venv, sites[0]
}

// Issue 26 item 3: npud's discovery finds OpenVINO's real core C library
// in a Python environment (site-packages/openvino/libs) and reads the
// runtime's version and devices from it, with no LD_LIBRARY_PATH.
func TestOfficialCoreFromPythonEnvironment(t *testing.T) {
	venv, site := realVenv(t)
	require.NotContains(t, os.Getenv("LD_LIBRARY_PATH"), venv, "the loader must not be told where the wheel is")

	lib, err := OpenCore(LibraryOptions{Getenv: envOf("VIRTUAL_ENV", venv)})
	require.NoError(t, err)
	assert.Equal(t, "python wheel", lib.Source)
	assert.Equal(t, filepath.Join(site, "openvino", "libs"), filepath.Dir(lib.CorePath))
	assert.True(t, strings.HasPrefix(lib.Build, "2026.4.1-"), "build %q", lib.Build)
	assert.Equal(t, Version{2026, 4}, lib.Version)
	assert.Empty(t, lib.GenAIPath, "the core alone")

	devices, err := lib.Devices()
	require.NoError(t, err)
	var cpu *Device
	for i := range devices {
		if devices[i].Name == "CPU" {
			cpu = &devices[i]
		}
	}
	require.NotNil(t, cpu, "the CPU plugin is in the wheel: %v", devices)
	assert.NotEmpty(t, cpu.FullName, "FULL_DEVICE_NAME")
	assert.Empty(t, cpu.DriverVersion, "NPU_DRIVER_VERSION is asked of NPUs only")

	// The GenAI C library is not in any wheel (openvino.genai's
	// pyproject.toml installs the wheel_genai component only): discovery
	// says it was not found, and where it looked.
	_, err = OpenLibrary(LibraryOptions{Getenv: envOf("VIRTUAL_ENV", venv)})
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), filepath.Join(site, "openvino_genai"))
}

// Issue 26 item 3: the real core's error texts and answers, which the test
// library's core half (testdata/ovgenai/ovcore_test.c) reproduces.
func TestOfficialCoreErrorTexts(t *testing.T) {
	venv, _ := realVenv(t)
	real, err := OpenCore(LibraryOptions{Getenv: envOf("VIRTUAL_ENV", venv)})
	require.NoError(t, err)
	for status := 0; status >= -18; status-- {
		want := real.errorInfo(status)
		assert.Equal(t, want, testLib.errorInfo(status), "ov_get_error_info(%d)", status)
	}
	// The message is per thread: stay on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Before any failure there is no message.
	_, _, _, before := real.askProperty("CPU", "FULL_DEVICE_NAME")
	_, _, _, testBefore := testLib.askProperty("CPU", "FULL_DEVICE_NAME")
	assert.Empty(t, before)
	assert.Empty(t, testBefore)
	// A property the device does not have: GENERAL_ERROR, and the
	// plugin's exception as the last error message, whose last line is
	// the plugin's own words (the lines above it name OpenVINO's files).
	_, status, info, msg := real.askProperty("CPU", "NPUD_NO_SUCH_PROPERTY")
	_, testStatus, testInfo, testMsg := testLib.askProperty("CPU", "NPUD_NO_SUCH_PROPERTY")
	assert.Equal(t, status, testStatus)
	assert.Equal(t, info, testInfo)
	assert.Equal(t, lastLine(msg), lastLine(testMsg))
	assert.Equal(t, "Cannot get unsupported property: NPUD_NO_SUCH_PROPERTY", lastLine(msg))
	// askProperty frees its core after reading the message, and
	// ov_core_free clears it: the next call starts without one.
	_, _, _, after := real.askProperty("CPU", "FULL_DEVICE_NAME")
	_, _, _, testAfter := testLib.askProperty("CPU", "FULL_DEVICE_NAME")
	assert.Empty(t, after)
	assert.Empty(t, testAfter)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// Issue 27 item 3: loading OpenVINO's libraries by path resolves their
// dependency chain without LD_LIBRARY_PATH only when npud loads the chain
// first. The wheel's GenAI C++ library carries no RUNPATH and needs
// libopenvino from the openvino wheel's folder: alone it does not load;
// after dependencyChain's libraries it does. Each case runs in a fresh
// process, where nothing of OpenVINO is loaded yet.
func TestOfficialDependencyChain(t *testing.T) {
	_, site := realVenv(t)
	genaiCpp := findLibrary([]string{filepath.Join(site, "openvino_genai")}, "libopenvino_genai.so")
	require.NotEmpty(t, genaiCpp)
	core := findLibrary([]string{filepath.Join(site, "openvino", "libs")}, "libopenvino_c.so")
	require.NotEmpty(t, core)

	run := func(mode string) (string, error) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestOfficialDependencyChainChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "NPUD_CHAIN_CHILD="+mode, "NPUD_CHAIN_GENAI="+genaiCpp, "NPUD_CHAIN_CORE="+core)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("alone")
	require.Error(t, err, "the wheel's GenAI library loaded alone: %s", out)
	assert.Contains(t, out, "libopenvino.so.", "what is missing is the core: %s", out)

	out, err = run("chain")
	require.NoError(t, err, out)
	assert.Contains(t, out, "chain: libtbb.so.12 libopenvino.so.2641 libopenvino_genai.so.2641")
}

// TestOfficialDependencyChainChild is TestOfficialDependencyChain's fresh process.
func TestOfficialDependencyChainChild(t *testing.T) {
	mode := os.Getenv("NPUD_CHAIN_CHILD")
	if mode == "" {
		t.Skip("run by TestOfficialDependencyChain")
	}
	genaiCpp, core := os.Getenv("NPUD_CHAIN_GENAI"), os.Getenv("NPUD_CHAIN_CORE")
	if mode == "alone" {
		_, err := keepChain([]string{genaiCpp})
		require.NoError(t, err) // fails, as the parent expects
		return
	}
	// GenAI's C library would sit beside its C++ library.
	chain, err := keepChain(dependencyChain(filepath.Join(filepath.Dir(genaiCpp), "libopenvino_genai_c.so"), core))
	require.NoError(t, err)
	names := make([]string, len(chain))
	for i, p := range chain {
		names[i] = filepath.Base(p)
	}
	t.Log("chain: " + strings.Join(names, " "))
	_, err = keepChain([]string{genaiCpp})
	require.NoError(t, err)
}

// Issue 26 item 5: the differential conformance suite
// (testdata/openvino/conformance): each scenario on the official GenAI
// (Python, CPU, the tiny model) and on the test library (C API, the same
// model folder), the same observables, or a difference written down in
// the suite with the upstream file that explains it.
func TestOfficialConformance(t *testing.T) {
	venv, _ := realVenv(t)
	root := filepath.Join("..", "..", "testdata", "openvino")
	cmd := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"), filepath.Join(root, "conformance", "conformance.py"),
		"--model", filepath.Join(root, "tinymodel", "model"), "--testlib", filepath.Dir(testLib.GenAIPath))
	out, err := cmd.CombinedOutput()
	t.Logf("conformance:\n%s", out)
	require.NoError(t, err, "a difference between the official GenAI and the test library:\n%s", out)
}

// Issue 39 item 7: the tiny model carries the published Qwen3 chat
// template, unmodified, everywhere GenAI may read it: the folder's
// tokenizer_config.json and chat_template.jinja, and the tokenizer IR's
// chat_template rt_info, which wins when present
// (src/cpp/src/tokenizer/tokenizer_impl.cpp, setup_tokenizer). What the
// real Tokenizer reports is that text byte for byte.
func TestOfficialTinyModelCarriesTheQwen3Template(t *testing.T) {
	venv, _ := realVenv(t)
	root := filepath.Join("..", "..", "testdata")
	model := filepath.Join(root, "openvino", "tinymodel", "model")
	published, err := os.ReadFile(filepath.Join(root, "chattemplates", "Qwen--Qwen3-1.7B.jinja"))
	require.NoError(t, err)

	script := "import sys, openvino_genai as g; sys.stdout.buffer.write(g.Tokenizer(sys.argv[1]).chat_template.encode())"
	got, err := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"), "-c", script, model).Output()
	require.NoError(t, err)
	assert.Equal(t, string(published), string(got), "GenAI's template of the tiny model")

	jinja, err := os.ReadFile(filepath.Join(model, "chat_template.jinja"))
	require.NoError(t, err)
	assert.Equal(t, string(published), string(jinja), "chat_template.jinja")
	raw, err := os.ReadFile(filepath.Join(model, "tokenizer_config.json"))
	require.NoError(t, err)
	var config struct {
		ChatTemplate string `json:"chat_template"`
	}
	require.NoError(t, json.Unmarshal(raw, &config))
	assert.Equal(t, string(published), config.ChatTemplate, "tokenizer_config.json")
}
