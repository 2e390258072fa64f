//go:build cgo

package openvino

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 38.9: GenAI loads openvino-tokenizers from OPENVINO_TOKENIZERS_PATH_GENAI,
// else beside its own library (realpath resolved); where neither holds
// one, discovery looks where it finds the core, and says when GenAI must
// be pointed at what it found.
func TestFindTokenizers(t *testing.T) {
	touch := func(t *testing.T, path string) string {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, nil, 0o644))
		return path
	}
	const genaiName, tok = "libopenvino_genai_c.so", "libopenvino_tokenizers.so"
	for _, tc := range []struct {
		name   string
		layout func(t *testing.T, root string) (genai, core string, env map[string]string, want string)
		point  bool
	}{
		{"beside GenAI's library", func(t *testing.T, root string) (string, string, map[string]string, string) {
			return touch(t, filepath.Join(root, "lib", genaiName)), "", nil, touch(t, filepath.Join(root, "lib", tok))
		}, false},
		{"the variable GenAI reads first", func(t *testing.T, root string) (string, string, map[string]string, string) {
			touch(t, filepath.Join(root, "lib", tok))
			return touch(t, filepath.Join(root, "lib", genaiName)), "", map[string]string{EnvTokenizersPath: "/opt/mine/x.so"}, "/opt/mine/x.so"
		}, false},
		{"beside the real file of a link", func(t *testing.T, root string) (string, string, map[string]string, string) {
			real := touch(t, filepath.Join(root, "real", genaiName))
			link := filepath.Join(root, "link", genaiName)
			require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
			require.NoError(t, os.Symlink(real, link))
			return link, "", nil, touch(t, filepath.Join(root, "real", tok))
		}, false},
		{"the tokenizers wheel beside GenAI's", func(t *testing.T, root string) (string, string, map[string]string, string) {
			site := filepath.Join(root, "site-packages")
			return touch(t, filepath.Join(site, "openvino_genai", genaiName)), "", nil, touch(t, filepath.Join(site, "openvino_tokenizers", "lib", tok))
		}, true},
		{"the core's folder", func(t *testing.T, root string) (string, string, map[string]string, string) {
			return touch(t, filepath.Join(root, "genai", genaiName)), touch(t, filepath.Join(root, "core", "libopenvino_c.so")), nil,
				touch(t, filepath.Join(root, "core", tok))
		}, true},
		{"the loader's path", func(t *testing.T, root string) (string, string, map[string]string, string) {
			want := touch(t, filepath.Join(root, "ld", tok))
			return touch(t, filepath.Join(root, "genai", genaiName)), "", map[string]string{"LD_LIBRARY_PATH": filepath.Join(root, "nothing") + ":" + filepath.Dir(want)}, want
		}, true},
		{"a Python environment's wheel", func(t *testing.T, root string) (string, string, map[string]string, string) {
			site := filepath.Join(root, "venv", "lib", "python3.12", "site-packages")
			require.NoError(t, os.MkdirAll(filepath.Join(site, "openvino"), 0o755))
			return touch(t, filepath.Join(root, "genai", genaiName)), "", map[string]string{"VIRTUAL_ENV": filepath.Join(root, "venv")},
				touch(t, filepath.Join(site, "openvino_tokenizers", "lib", tok))
		}, true},
		{"an archive named by OpenVINO_DIR", func(t *testing.T, root string) (string, string, map[string]string, string) {
			return touch(t, filepath.Join(root, "genai", genaiName)), "", map[string]string{"OpenVINO_DIR": filepath.Join(root, "ov")},
				touch(t, filepath.Join(root, "ov", "runtime", "lib", "intel64", tok))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			genai, core, env, want := tc.layout(t, t.TempDir())
			path, point, err := FindTokenizers(genai, core, func(k string) string { return env[k] })
			require.NoError(t, err)
			assert.Equal(t, want, path)
			assert.Equal(t, tc.point, point)
		})
	}

	// A library the system loader found by name: its tokenizers are on
	// the loader's path, never another install's.
	ld := t.TempDir()
	want := touch(t, filepath.Join(ld, tok))
	site := filepath.Join(t.TempDir(), "venv", "lib", "python3.12", "site-packages")
	touch(t, filepath.Join(site, "openvino_tokenizers", "lib", tok))
	byName := map[string]string{"LD_LIBRARY_PATH": ld, "VIRTUAL_ENV": filepath.Dir(filepath.Dir(filepath.Dir(site)))}
	path, point, err := FindTokenizers(genaiName, "", func(k string) string { return byName[k] })
	require.NoError(t, err)
	assert.Equal(t, want, path)
	assert.True(t, point)

	root := t.TempDir()
	genai := touch(t, filepath.Join(root, "genai", genaiName))
	path, _, err = FindTokenizers(genai, "", func(string) string { return "" })
	if err == nil {
		t.Skipf("this machine has openvino-tokenizers where discovery looks: %s", path)
	}
	assert.True(t, errors.Is(err, ErrTokenizersNotFound), "%v", err)
	assert.Contains(t, err.Error(), filepath.Dir(genai), "it says where GenAI looked")
	assert.Contains(t, err.Error(), EnvTokenizersPath, "and how to point GenAI at one")
}
