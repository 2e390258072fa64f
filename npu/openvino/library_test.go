//go:build cgo

package openvino

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// installAt lays the test library out as a release installs it: the
// versioned files, and the unversioned links unless versionedOnly.
func installAt(t *testing.T, dir string, versionedOnly bool) {
	t.Helper()
	src := testLib.GenAIPath[:strings.LastIndex(testLib.GenAIPath, "/")]
	require.NoError(t, os.MkdirAll(dir, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		name := e.Name()
		if versionedOnly && strings.HasSuffix(name, ".so") {
			continue
		}
		target, err := filepath.EvalSymlinks(filepath.Join(src, name))
		require.NoError(t, err)
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
}

func envOf(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// Issue 14: each discovery source finds the library, in a release's layout.
func TestDiscoverySources(t *testing.T) {
	root := t.TempDir()
	archive := filepath.Join(root, "openvino_2026.3.0")
	installAt(t, filepath.Join(archive, "runtime", "lib", "intel64"), false)
	venv := filepath.Join(root, "venv")
	site := filepath.Join(venv, "lib", "python3.11", "site-packages")
	installAt(t, filepath.Join(site, "openvino_genai"), true)
	versioned := filepath.Join(root, "versioned")
	installAt(t, versioned, true)

	for _, tc := range []struct {
		name       string
		opts       LibraryOptions
		wantSource string
		wantIn     string
	}{
		{"--openvino-lib names the file", LibraryOptions{Path: filepath.Join(archive, "runtime", "lib", "intel64", "libopenvino_genai_c.so")},
			"--openvino-lib", archive},
		{"--openvino-lib names the archive's root", LibraryOptions{Path: archive}, "--openvino-lib", archive},
		{"--openvino-lib names a folder of versioned files only", LibraryOptions{Path: versioned}, "--openvino-lib", versioned},
		{"OpenVINO_DIR as setupvars sets it (runtime/cmake)", LibraryOptions{Getenv: envOf("OpenVINO_DIR", filepath.Join(archive, "runtime", "cmake"))},
			"OpenVINO_DIR", archive},
		{"INTEL_OPENVINO_DIR", LibraryOptions{Getenv: envOf("INTEL_OPENVINO_DIR", archive)}, "INTEL_OPENVINO_DIR", archive},
		{"--openvino-lib before the environment", LibraryOptions{Path: versioned, Getenv: envOf("INTEL_OPENVINO_DIR", archive)}, "--openvino-lib", versioned},
		{"a Python wheel in the active virtual environment", LibraryOptions{Getenv: envOf("VIRTUAL_ENV", venv)}, "python wheel", site},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, err := OpenLibrary(tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.wantSource, lib.Source)
			assert.True(t, strings.HasPrefix(lib.GenAIPath, tc.wantIn), "%s is under %s", lib.GenAIPath, tc.wantIn)
			assert.Equal(t, Version{2026, 3}, lib.Version)
			devices, err := lib.Devices()
			require.NoError(t, err)
			assert.NotEmpty(t, devices, "the loaded library works")
		})
	}
}

// Issue 14: an archive's usual folders are searched in the archive's
// layout (the glob itself is /opt/intel/openvino*).
func TestArchiveLayout(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "openvino")
	installAt(t, filepath.Join(archive, "runtime", "lib", "intel64"), false)
	genai, core := inRoot(archive)
	assert.Equal(t, filepath.Join(archive, "runtime", "lib", "intel64", "libopenvino_genai_c.so"), genai)
	assert.Equal(t, filepath.Join(archive, "runtime", "lib", "intel64", "libopenvino_c.so"), core)
	genai, _ = inRoot(t.TempDir())
	assert.Empty(t, genai)
}

// Issue 14: a library that cannot be used says why, naming what it lacks.
func TestUnusableLibraries(t *testing.T) {
	t.Run("missing everywhere", func(t *testing.T) {
		_, err := OpenLibrary(LibraryOptions{Getenv: envOf("INTEL_OPENVINO_DIR", t.TempDir())})
		if err == nil {
			t.Skip("this machine has OpenVINO GenAI installed")
		}
		require.ErrorIs(t, err, ErrNotFound)
		var lerr *LoadError
		require.ErrorAs(t, err, &lerr)
		sources := map[string]bool{}
		for _, a := range lerr.Attempts {
			sources[a.Source] = true
		}
		assert.True(t, sources["INTEL_OPENVINO_DIR"] && sources["system"], "every place is listed: %+v", lerr.Attempts)
		assert.Contains(t, err.Error(), "looked in")
	})
	t.Run("--openvino-lib without the library is an error, not a fallback", func(t *testing.T) {
		dir := t.TempDir()
		_, err := OpenLibrary(LibraryOptions{Path: dir, Getenv: envOf("INTEL_OPENVINO_DIR", filepath.Dir(testLib.GenAIPath))})
		require.ErrorIs(t, err, ErrNotFound)
		assert.Contains(t, err.Error(), dir)
	})
	t.Run("too old", func(t *testing.T) {
		t.Setenv("OVTEST_VERSION", "2025.4.0-20000-ovtest-releases/2025/4")
		_, err := OpenLibrary(LibraryOptions{Path: testLib.GenAIPath})
		require.ErrorIs(t, err, ErrTooOld)
		assert.Contains(t, err.Error(), "2025.4")
		assert.Contains(t, err.Error(), "2026.2 or newer")
	})
	t.Run("a symbol missing", func(t *testing.T) {
		dir, err := ovtestlib.Dir(ovtestlib.WithoutGetString)
		require.NoError(t, err)
		_, err = OpenLibrary(LibraryOptions{Path: dir})
		require.ErrorIs(t, err, ErrMissingSymbol)
		assert.Contains(t, err.Error(), "ov_genai_decoded_results_get_string")
		assert.Contains(t, err.Error(), "2026.2 or newer")
	})
}

// Issue 15: with worker processes the daemon only finds the library.
func TestFindLibraryDoesNotNeedToLoad(t *testing.T) {
	dir := t.TempDir()
	installAt(t, dir, true)
	path, err := FindLibrary(LibraryOptions{Path: dir})
	require.NoError(t, err)
	assert.Equal(t, dir, filepath.Dir(path))
	_, err = FindLibrary(LibraryOptions{Path: t.TempDir()})
	require.ErrorIs(t, err, ErrNotFound)
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		build string
		want  Version
		ok    bool
	}{
		{"2026.3.0-19807-44526285f24-releases/2026/3", Version{2026, 3}, true},
		{"2026.2.1-1-abc", Version{2026, 2}, true},
		{"2025.4", Version{2025, 4}, true},
		{"custom", Version{}, false},
		{"", Version{}, false},
	} {
		got, ok := parseVersion(tc.build)
		assert.Equal(t, tc.ok, ok, tc.build)
		assert.Equal(t, tc.want, got, tc.build)
	}
	assert.True(t, Version{2026, 1}.Less(MinVersion))
	assert.False(t, Version{2026, 2}.Less(MinVersion))
	assert.False(t, Version{2027, 0}.Less(MinVersion))
}

// Issue 26 item 6 (found running npud on GenAI's C library put into a
// wheel's openvino_genai folder): the core is the openvino wheel's, in
// site-packages/openvino/libs, also when the GenAI library is named by
// path, as the daemon names it to its workers. Without the core, the
// dependency chain misses libopenvino and GenAI's C++ library does not load.
func TestWheelLayoutCoreBesideGenAI(t *testing.T) {
	site := filepath.Join(t.TempDir(), "lib", "python3.11", "site-packages")
	all := filepath.Join(t.TempDir(), "all")
	installAt(t, all, false)
	entries, err := os.ReadDir(all)
	require.NoError(t, err)
	for _, e := range entries {
		dir := filepath.Join(site, "openvino", "libs")
		if strings.HasPrefix(e.Name(), "libopenvino_genai_c") {
			dir = filepath.Join(site, "openvino_genai")
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
		target, err := os.Readlink(filepath.Join(all, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.Symlink(target, filepath.Join(dir, e.Name())))
	}
	// The openvino-tokenizers wheel's library, which GenAI does not find
	// from a C program in this layout.
	tokenizers := filepath.Join(site, "openvino_tokenizers", "lib", "libopenvino_tokenizers.so")
	require.NoError(t, os.MkdirAll(filepath.Dir(tokenizers), 0o755))
	require.NoError(t, os.WriteFile(tokenizers, nil, 0o644))
	t.Setenv(EnvTokenizersPath, "")
	genai := filepath.Join(site, "openvino_genai", "libopenvino_genai_c.so")
	for _, opts := range []LibraryOptions{{Path: genai}, {Getenv: envOf("VIRTUAL_ENV", filepath.Dir(filepath.Dir(filepath.Dir(site))))}} {
		lib, err := OpenLibrary(opts)
		require.NoError(t, err)
		assert.Equal(t, genai, lib.GenAIPath)
		assert.Equal(t, filepath.Join(site, "openvino", "libs", "libopenvino_c.so"), lib.CorePath)
		assert.Equal(t, tokenizers, os.Getenv(EnvTokenizersPath), "GenAI is pointed at the tokenizers wheel's library")
	}
	// One the user set is kept.
	t.Setenv(EnvTokenizersPath, "/opt/mine/libopenvino_tokenizers.so")
	_, err = OpenLibrary(LibraryOptions{Path: genai})
	require.NoError(t, err)
	assert.Equal(t, "/opt/mine/libopenvino_tokenizers.so", os.Getenv(EnvTokenizersPath))
}
