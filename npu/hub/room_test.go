package hub

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 25 item 11: a pull checks the announced size against the free
// space (with a margin) and --max-model-bytes before it writes anything.
func TestDownloadChecksRoomFirst(t *testing.T) {
	hub, srv := newFakeHub(t)
	var total int64
	for _, b := range hub.files {
		total += int64(len(b))
	}
	for _, tc := range []struct {
		name    string
		free    int64
		max     int64
		wantErr error
	}{
		{"room for the model and its margin", total + SpaceMargin(total), 0, nil},
		{"room for the model, not the margin", total + SpaceMargin(total) - 1, 0, ErrNoSpace},
		{"within the cap", 1 << 40, total, nil},
		{"past the cap", 1 << 40, total - 1, ErrModelTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := client(srv)
			c.MaxModelBytes = tc.max
			var asked string
			c.FreeSpace = func(d string) (int64, error) { asked = d; return tc.free, nil }
			err := c.Download(context.Background(), "OpenVINO/tiny-ov", dir, nil)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, dir, asked, "the models folder's file system")
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			entries, _ := os.ReadDir(dir)
			assert.Empty(t, entries, "nothing was written")
		})
	}

	// What a partial folder holds already counts as written.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tiny-ov.partial"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tiny-ov.partial", "openvino_model.bin"), hub.files["openvino_model.bin"][:large/2], 0o644))
	c := client(srv)
	c.FreeSpace = func(string) (int64, error) { return total - large/2 + SpaceMargin(total), nil }
	require.NoError(t, c.Download(context.Background(), "OpenVINO/tiny-ov", dir, nil))
}

// Issue 25 item 11: a listing whose file names hold control characters
// (which would reach terminals and logs) is refused.
func TestDownloadRefusesControlCharactersInNames(t *testing.T) {
	for _, name := range []string{"evil\x1b]0;title\x07.txt", "new\nline.json", "c1\u009b2J.txt", "del\x7f"} {
		hub, srv := newFakeHub(t)
		hub.files[name] = []byte("x")
		err := client(srv).Download(context.Background(), "OpenVINO/tiny-ov", t.TempDir(), nil)
		require.ErrorContains(t, err, "unsafe path", "%q", name)
	}
}
