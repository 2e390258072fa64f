package modelstore

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
	"github.com/npud/npud/npu/hub/hubtest"
)

func model(t *testing.T, dir, name string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name, "openvino_model.xml"), []byte("<net/>"), 0o644))
}

func TestScanListsOnlyCompleteModels(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b-model", "a-model", "half.partial", ".hidden", "with space"} {
		model(t, dir, name)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "not-a-model"), 0o755))
	models, err := New(dir, nil).Scan(2048)
	require.NoError(t, err)
	var ids []string
	for _, m := range models {
		ids = append(ids, m.ID)
		assert.Equal(t, 2048, m.ContextLength)
		assert.Equal(t, int64(len("<net/>")), m.Size)
	}
	assert.Equal(t, []string{"a-model", "b-model"}, ids, "sorted; a folder being written is never listed")
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"Llama-3.2-1B-Instruct-int4-ov", true},
		{"phi_3.5", true},
		{"", false},
		{"..", false},
		{"../etc", false},
		{"a/b", false},
		{".hidden", false},
		{"x.partial", false},
		{"nul\x00byte", false},
		{strings.Repeat("a", 201), false},
	} {
		err := ValidName(tc.name)
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.name, err)
		if err != nil {
			assert.ErrorIs(t, err, npu.ErrInvalidRequest, "a bad name is the client's error (400)")
		}
	}
	for _, tc := range []struct {
		repo string
		ok   bool
	}{
		{"OpenVINO/Phi-3-mini-int4-ov", true},
		{"no-owner", false},
		{"a/b/c", false},
		{"a/../b", false},
		{"/b", false},
		{"a/", false},
	} {
		err := ValidRepo(tc.repo)
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.repo, err)
	}
}

func TestCopy(t *testing.T) {
	dir := t.TempDir()
	model(t, dir, "src")
	s := New(dir, nil)
	require.NoError(t, s.Copy(t.Context(), "src", "dst"))
	got, err := os.ReadFile(filepath.Join(dir, "dst", "openvino_model.xml"))
	require.NoError(t, err)
	assert.Equal(t, "<net/>", string(got))

	assert.ErrorContains(t, s.Copy(t.Context(), "src", "dst"), "already exists")
	assert.ErrorIs(t, s.Copy(t.Context(), "nope", "x"), npu.ErrModelNotFound)
	for _, bad := range []string{"../escape", "a/b", "", "x.partial"} {
		err := s.Copy(t.Context(), "src", bad)
		var ie *npu.InvalidRequestError
		require.ErrorAs(t, err, &ie, "%q", bad)
		assert.Equal(t, "destination", ie.Param)
	}
}

func TestDelete(t *testing.T) {
	dir := t.TempDir()
	model(t, dir, "m")
	s := New(dir, nil)
	assert.ErrorIs(t, s.Delete("nope"), npu.ErrModelNotFound)
	assert.ErrorIs(t, s.Delete("../m"), npu.ErrInvalidRequest)
	require.NoError(t, s.Delete("m"))
	_, err := os.Stat(filepath.Join(dir, "m"))
	assert.True(t, os.IsNotExist(err))
}

func TestPull(t *testing.T) {
	srv := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
	dir := t.TempDir()
	s := New(dir, &hub.Client{Endpoint: srv.URL, Backoff: time.Millisecond})
	var seen []npu.PullProgress
	require.NoError(t, s.Pull(t.Context(), "OpenVINO/tiny-ov", func(p npu.PullProgress) { seen = append(seen, p) }))
	models, err := s.Scan(0)
	require.NoError(t, err)
	require.Len(t, models, 1)
	assert.Equal(t, "tiny-ov", models[0].ID)
	require.NotEmpty(t, seen)
	assert.Equal(t, "pulling manifest", seen[0].Status, "the caller that starts a pull sees every step, the first included")

	assert.ErrorIs(t, s.Pull(t.Context(), "not a repo", nil), npu.ErrInvalidRequest)
	assert.ErrorContains(t, s.Pull(t.Context(), "OpenVINO/tiny-ov", nil), "already exists")
	assert.ErrorIs(t, New(dir, nil).Pull(t.Context(), "OpenVINO/other", nil), npu.ErrNotSupported)
}

// gatedHub serves a repository whose weights wait for a gate, counting
// downloads; broken makes the weights fail for good (a 404).
type gatedHub struct {
	gate      chan struct{}
	downloads atomic.Int32
	broken    bool
}

func (h *gatedHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const repo, rev = "OpenVINO/slow-ov", "abcdef0123456789abcdef0123456789abcdef01"
	files := map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"}
	switch r.URL.Path {
	case "/api/models/" + repo + "/revision/main":
		_ = json.NewEncoder(w).Encode(map[string]string{"sha": rev})
	case "/api/models/" + repo + "/tree/" + rev:
		var list []map[string]any
		for p, b := range files {
			list = append(list, map[string]any{"type": "file", "path": p, "size": len(b)})
		}
		_ = json.NewEncoder(w).Encode(list)
	case "/" + repo + "/resolve/" + rev + "/openvino_model.xml":
		_, _ = io.WriteString(w, files["openvino_model.xml"])
	case "/" + repo + "/resolve/" + rev + "/openvino_model.bin":
		h.downloads.Add(1)
		<-h.gate
		if h.broken {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, files["openvino_model.bin"])
	default:
		http.NotFound(w, r)
	}
}

// Issue 11: two pulls of one repository downloaded it twice, into the
// same folder. The second joins the first.
func TestConcurrentPullsOfOneRepositoryShareOneDownload(t *testing.T) {
	h := &gatedHub{gate: make(chan struct{})}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := New(t.TempDir(), &hub.Client{Endpoint: srv.URL, Backoff: time.Millisecond})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Pull(t.Context(), "OpenVINO/slow-ov", nil)
		}()
	}
	require.Eventually(t, func() bool { return h.downloads.Load() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the others have joined by now
	close(h.gate)
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err, "every caller gets the pull's result")
	}
	assert.EqualValues(t, 1, h.downloads.Load(), "one download")
}

// Issue 11: a failed pull left a partial folder behind.
func TestFailedPullLeavesNothing(t *testing.T) {
	h := &gatedHub{gate: make(chan struct{}), broken: true}
	close(h.gate)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	s := New(dir, &hub.Client{Endpoint: srv.URL, Backoff: time.Millisecond})
	err := s.Pull(t.Context(), "OpenVINO/slow-ov", nil)
	require.ErrorContains(t, err, "404")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no model folder, no partial folder")
}

// A caller that leaves does not stop a pull others wait for; the last one
// to leave does.
func TestLastCallerLeavingStopsThePull(t *testing.T) {
	h := &gatedHub{gate: make(chan struct{})}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { close(h.gate); srv.Close() })
	dir := t.TempDir()
	s := New(dir, &hub.Client{Endpoint: srv.URL, Backoff: time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Pull(ctx, "OpenVINO/slow-ov", nil) }()
	require.Eventually(t, func() bool { return h.downloads.Load() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.True(t, errors.Is(<-done, context.Canceled))
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.pulls) == 0
	}, 5*time.Second, time.Millisecond, "the pull stopped")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
