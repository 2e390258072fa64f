//go:build unix

package modelstore

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 11: a copy that failed half-way left a half model behind.
func TestFailedCopyLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	model(t, dir, "src")
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "src", "pipe"), 0o644)) // os.CopyFS refuses irregular files
	err := New(dir, nil).Copy(t.Context(), "src", "dst")
	require.Error(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the source is left")
}
