package daemon

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Issue 35: as a normal user, `npud serve` then `npud pull` failed with
// "mkdir /var/lib/npud/models: permission denied". Outside the service
// the default folders are the user's own (XDG state and cache); root and
// a systemd unit keep the service's.
func TestDefaultFoldersForWhoRunsNpud(t *testing.T) {
	for _, tc := range []struct {
		name         string
		goos         string
		euid         int
		env          map[string]string
		models, cach string
	}{
		{"root", "linux", 0, map[string]string{"HOME": "/root"}, "/var/lib/npud/models", "/var/cache/npud"},
		{"a user", "linux", 1000, map[string]string{"HOME": "/home/ann"}, "/home/ann/.local/state/npud/models", "/home/ann/.cache/npud"},
		{"a user with XDG dirs", "linux", 1000, map[string]string{"HOME": "/home/ann", "XDG_STATE_HOME": "/data/state", "XDG_CACHE_HOME": "/fast/cache"},
			"/data/state/npud/models", "/fast/cache/npud"},
		{"relative XDG dirs are ignored", "linux", 1000, map[string]string{"HOME": "/home/ann", "XDG_STATE_HOME": "state", "XDG_CACHE_HOME": "cache"},
			"/home/ann/.local/state/npud/models", "/home/ann/.cache/npud"},
		{"a systemd unit's own folders", "linux", 61234, map[string]string{"HOME": "/", "STATE_DIRECTORY": "/var/lib/npud", "CACHE_DIRECTORY": "/var/cache/npud"},
			"/var/lib/npud/models", "/var/cache/npud"},
		{"no home: the service's, and the error says --models-dir", "linux", 1000, map[string]string{}, "/var/lib/npud/models", "/var/cache/npud"},
		{"macOS user", "darwin", 501, map[string]string{"HOME": "/Users/ann"}, "/Users/ann/.local/state/npud/models", "/Users/ann/.cache/npud"},
		{"Windows", "windows", -1, map[string]string{"ProgramData": `D:\PD`, "HOME": `C:\Users\ann`}, filepath.Join(`D:\PD`, "npud", "models"), filepath.Join(`D:\PD`, "npud", "cache")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := defaultDirs(tc.goos, tc.euid, func(k string) string { return tc.env[k] })
			assert.Equal(t, tc.models, got.models)
			assert.Equal(t, tc.cach, got.cache)
		})
	}
}

// Issue 35: a models folder this user may not write says how to choose
// another; other errors pass unchanged.
func TestExplainModelsDir(t *testing.T) {
	denied := fmt.Errorf("models directory: %w", &fs.PathError{Op: "mkdir", Path: "/var/lib/npud/models", Err: syscall.EACCES})
	err := ExplainModelsDir("/var/lib/npud/models", denied)
	assert.ErrorIs(t, err, fs.ErrPermission)
	assert.Contains(t, err.Error(), "mkdir /var/lib/npud/models: permission denied: this user may not write the models folder /var/lib/npud/models: choose a folder of yours with --models-dir DIR (or NPUD_MODELS_DIR)")

	other := fmt.Errorf("models directory: %w", &fs.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENOSPC})
	assert.Equal(t, other, ExplainModelsDir("/x", other))
	assert.NoError(t, ExplainModelsDir("/x", nil))
}
