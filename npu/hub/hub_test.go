package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeHub is a Hugging Face–compatible hub on loopback serving one repo.
type fakeHub struct {
	files   map[string][]byte // path → content
	lfs     map[string]bool   // files listed with a sha256
	corrupt map[string]bool   // serve different bytes than listed
	cutOnce map[string]bool   // drop the connection halfway, once
	mu      sync.Mutex
	ranges  []string // Range headers seen
}

func newFakeHub(t *testing.T) (*fakeHub, *httptest.Server) {
	weights := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	h := &fakeHub{
		files: map[string][]byte{
			"openvino_model.xml":               []byte("<net name='tiny'/>"),
			"openvino_model.bin":               weights,
			"tokenizer/openvino_tokenizer.xml": []byte("<tokenizer/>"),
		},
		lfs:     map[string]bool{"openvino_model.bin": true},
		corrupt: map[string]bool{},
		cutOnce: map[string]bool{},
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const repo = "OpenVINO/tiny-ov"
	switch {
	case r.URL.Path == "/api/models/"+repo+"/tree/main":
		var list []map[string]any
		list = append(list, map[string]any{"type": "directory", "path": "tokenizer"})
		for p, b := range h.files {
			e := map[string]any{"type": "file", "path": p, "size": len(b)}
			if h.lfs[p] {
				sum := sha256.Sum256(b)
				e["lfs"] = map[string]any{"oid": hex.EncodeToString(sum[:]), "size": len(b)}
			}
			list = append(list, e)
		}
		_ = json.NewEncoder(w).Encode(list)
	case strings.HasPrefix(r.URL.Path, "/"+repo+"/resolve/main/"):
		p := strings.TrimPrefix(r.URL.Path, "/"+repo+"/resolve/main/")
		b, ok := h.files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		h.ranges = append(h.ranges, r.Header.Get("Range"))
		cut := h.cutOnce[p]
		h.cutOnce[p] = false
		h.mu.Unlock()
		if h.corrupt[p] {
			b = bytes.ToUpper(b)
		}
		if cut {
			w.Header().Set("Content-Length", itoa(len(b)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-file
		}
		http.ServeContent(w, r, p, time.Time{}, bytes.NewReader(b))
	default:
		http.NotFound(w, r)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func client(srv *httptest.Server) *Client {
	return &Client{Endpoint: srv.URL, HTTP: srv.Client()}
}

func TestDownload(t *testing.T) {
	hub, srv := newFakeHub(t)
	dir := t.TempDir()
	var seen []Progress
	err := client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, func(p Progress) { seen = append(seen, p) })
	require.NoError(t, err)
	for p, want := range hub.files {
		got, err := os.ReadFile(filepath.Join(dir, "tiny-ov", filepath.FromSlash(p)))
		require.NoError(t, err)
		assert.Equal(t, want, got, p)
	}
	_, err = os.Stat(filepath.Join(dir, "tiny-ov.partial"))
	assert.True(t, os.IsNotExist(err), "the partial folder was renamed into place")
	require.NotEmpty(t, seen)
	assert.Equal(t, "pulling manifest", seen[0].Status)
	last := Progress{}
	for _, p := range seen {
		if p.File == "openvino_model.bin" {
			last = p
		}
	}
	assert.Equal(t, int64(1<<20), last.Completed)
	assert.Equal(t, last.Total, last.Completed)

	err = client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, nil)
	require.ErrorContains(t, err, "already exists")
}

func TestDownloadResumesAfterAnInterruption(t *testing.T) {
	hub, srv := newFakeHub(t)
	hub.cutOnce["openvino_model.bin"] = true
	dir := t.TempDir()
	err := client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, nil)
	require.Error(t, err, "the connection dropped mid-file")
	st, err := os.Stat(filepath.Join(dir, "tiny-ov.partial", "openvino_model.bin"))
	require.NoError(t, err, "the partial file is kept")
	kept := st.Size()
	assert.Positive(t, kept)
	assert.Less(t, kept, int64(1<<20))

	require.NoError(t, client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, nil))
	got, err := os.ReadFile(filepath.Join(dir, "tiny-ov", "openvino_model.bin"))
	require.NoError(t, err)
	assert.Equal(t, hub.files["openvino_model.bin"], got)
	assert.Contains(t, hub.ranges, "bytes="+itoa(int(kept))+"-", "the second pull asked only for the rest")
}

func TestDownloadRejectsACorruptedFile(t *testing.T) {
	hub, srv := newFakeHub(t)
	hub.corrupt["openvino_model.bin"] = true
	dir := t.TempDir()
	err := client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, nil)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "openvino_model.bin")
	_, err = os.Stat(filepath.Join(dir, "tiny-ov"))
	assert.True(t, os.IsNotExist(err), "nothing half-verified is put in place")
	_, err = os.Stat(filepath.Join(dir, "tiny-ov.partial", "openvino_model.bin"))
	assert.True(t, os.IsNotExist(err), "the corrupt file is removed so the next pull fetches it again")

	hub.corrupt["openvino_model.bin"] = false
	require.NoError(t, client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, nil))
}

func TestDownloadRefusals(t *testing.T) {
	hub, srv := newFakeHub(t)
	delete(hub.files, "openvino_model.xml")
	tests := []struct{ repo, has string }{
		{"OpenVINO/tiny-ov", "not an OpenVINO IR model"},
		{"OpenVINO/missing", "404"},
		{"no-owner", "want owner/name"},
		{"a/../b", "want owner/name"},
	}
	for _, tc := range tests {
		err := client(srv).Download(context.Background(), tc.repo, t.TempDir(), nil)
		require.ErrorContains(t, err, tc.has, tc.repo)
	}
}

func TestEndpointFromEnvironment(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
	assert.Equal(t, "http://127.0.0.1:9", (&Client{}).endpoint())
	assert.Equal(t, "http://x", (&Client{Endpoint: "http://x/"}).endpoint())
	assert.Equal(t, "tiny-ov", ModelName("OpenVINO/tiny-ov"))
}
