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

// fakeHub is a Hugging Face–compatible hub on loopback serving one repo,
// at revisions: main names one, files are served at any.
type fakeHub struct {
	mu       sync.Mutex
	main     string                       // the commit main resolves to
	revs     map[string]map[string][]byte // commit → path → content
	files    map[string][]byte            // the files of main's first commit, for the tests to change
	lfs      map[string]bool              // files listed with a sha256
	corrupt  map[string]bool              // serve different bytes than listed
	oversize map[string]bool              // serve more bytes than listed
	cutOnce  map[string]bool              // drop the connection halfway, once
	stall    map[string]time.Duration     // stall halfway, once, this long
	fail     map[string]int               // answer 503 this many times first
	ranges   []string                     // Range headers seen
	requests map[string]int               // file requests per path
	onList   func()                       // called after a listing is served
}

const (
	repo  = "OpenVINO/tiny-ov"
	rev1  = "1111111111111111111111111111111111111111"
	rev2  = "2222222222222222222222222222222222222222"
	large = 3 << 20 // the weights: large enough for progress inside the file
)

func newFakeHub(t *testing.T) (*fakeHub, *httptest.Server) {
	weights := bytes.Repeat([]byte("0123456789abcdef"), large/16)
	files := map[string][]byte{
		"openvino_model.xml":               []byte("<net name='tiny'/>"),
		"openvino_model.bin":               weights,
		"tokenizer/openvino_tokenizer.xml": []byte("<tokenizer/>"),
	}
	h := &fakeHub{
		main: rev1, revs: map[string]map[string][]byte{rev1: files}, files: files,
		lfs:     map[string]bool{"openvino_model.bin": true},
		corrupt: map[string]bool{}, oversize: map[string]bool{}, cutOnce: map[string]bool{},
		stall: map[string]time.Duration{}, fail: map[string]int{}, requests: map[string]int{},
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	main := h.main
	h.mu.Unlock()
	switch {
	case r.URL.Path == "/api/models/"+repo+"/revision/main":
		_ = json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": main})
	case strings.HasPrefix(r.URL.Path, "/api/models/"+repo+"/tree/"):
		files, ok := h.revs[strings.TrimPrefix(r.URL.Path, "/api/models/"+repo+"/tree/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		var list []map[string]any
		list = append(list, map[string]any{"type": "directory", "path": "tokenizer"})
		for p, b := range files {
			e := map[string]any{"type": "file", "path": p, "size": len(b)}
			if h.lfs[p] {
				sum := sha256.Sum256(b)
				e["lfs"] = map[string]any{"oid": hex.EncodeToString(sum[:]), "size": len(b)}
			}
			list = append(list, e)
		}
		_ = json.NewEncoder(w).Encode(list)
		if h.onList != nil {
			h.onList()
		}
	case strings.HasPrefix(r.URL.Path, "/"+repo+"/resolve/"):
		rest := strings.TrimPrefix(r.URL.Path, "/"+repo+"/resolve/")
		rev, p, _ := strings.Cut(rest, "/")
		b, ok := h.revs[rev][p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		h.ranges = append(h.ranges, r.Header.Get("Range"))
		h.requests[p]++
		cut := h.cutOnce[p]
		h.cutOnce[p] = false
		stall := h.stall[p]
		h.stall[p] = 0
		failing := h.fail[p] > 0
		if failing {
			h.fail[p]--
		}
		h.mu.Unlock()
		if failing {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if h.corrupt[p] {
			b = bytes.ToUpper(b)
		}
		if h.oversize[p] {
			w.WriteHeader(http.StatusOK)
			for range 8 { // eight times the announced size, and more if read
				_, _ = w.Write(b)
			}
			return
		}
		if stall > 0 {
			w.Header().Set("Content-Length", itoa(len(b)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			select {
			case <-time.After(stall):
			case <-r.Context().Done():
			}
			return
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
	return &Client{Endpoint: srv.URL, HTTP: srv.Client(), Backoff: time.Millisecond, IdleTimeout: 5 * time.Second}
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
	assert.Equal(t, int64(large), last.Completed)
	assert.Equal(t, last.Total, last.Completed)
	inside := 0
	for _, p := range seen {
		if p.File == "openvino_model.bin" && p.Completed > 0 && p.Completed < p.Total {
			inside++
		}
	}
	assert.Positive(t, inside, "bytes inside a large file are reported as they arrive")
	assert.Less(t, len(seen), 40, "progress is throttled, not one update per read")

	err = client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, nil)
	require.ErrorContains(t, err, "already exists")
}

func TestDownloadResumesAfterAnInterruption(t *testing.T) {
	hub, srv := newFakeHub(t)
	hub.cutOnce["openvino_model.bin"] = true
	dir := t.TempDir()
	once := client(srv)
	once.Attempts = 1
	err := once.Download(context.Background(), "OpenVINO/tiny-ov", dir, nil)
	require.Error(t, err, "the connection dropped mid-file")
	st, err := os.Stat(filepath.Join(dir, "tiny-ov.partial", "openvino_model.bin"))
	require.NoError(t, err, "the partial file is kept")
	kept := st.Size()
	assert.Positive(t, kept)
	assert.Less(t, kept, int64(large))

	require.NoError(t, client(srv).Download(context.Background(), "OpenVINO/tiny-ov", dir, nil))
	got, err := os.ReadFile(filepath.Join(dir, "tiny-ov", "openvino_model.bin"))
	require.NoError(t, err)
	assert.Equal(t, hub.files["openvino_model.bin"], got)
	assert.Contains(t, hub.ranges, "bytes="+itoa(int(kept))+"-", "the second pull asked only for the rest")
}

// A broken transfer is retried within the same pull, from where it broke.
func TestDownloadRetriesABrokenTransferFromWhereItBroke(t *testing.T) {
	hub, srv := newFakeHub(t)
	hub.cutOnce["openvino_model.bin"] = true
	hub.fail["tokenizer/openvino_tokenizer.xml"] = 2
	dir := t.TempDir()
	require.NoError(t, client(srv).Download(context.Background(), repo, dir, nil))
	got, err := os.ReadFile(filepath.Join(dir, "tiny-ov", "openvino_model.bin"))
	require.NoError(t, err)
	assert.Equal(t, hub.files["openvino_model.bin"], got)
	assert.Contains(t, hub.ranges, "bytes="+itoa(large/2)+"-", "the retry asked only for the rest")
	assert.Equal(t, 3, hub.requests["tokenizer/openvino_tokenizer.xml"], "two 503s, then the file")
}

// A transfer that stalls is cut by the idle timeout and resumed.
func TestStalledTransferIsResumed(t *testing.T) {
	hub, srv := newFakeHub(t)
	hub.stall["openvino_model.bin"] = 10 * time.Second
	c := client(srv)
	c.IdleTimeout = 100 * time.Millisecond
	dir := t.TempDir()
	start := time.Now()
	require.NoError(t, c.Download(context.Background(), repo, dir, nil))
	assert.Less(t, time.Since(start), 5*time.Second, "the stall was cut, not waited out")
	assert.Contains(t, hub.ranges, "bytes="+itoa(large/2)+"-")
}

// A refusal that would only repeat is not retried.
func TestDownloadDoesNotRetryARefusal(t *testing.T) {
	_, srv := newFakeHub(t)
	err := client(srv).Download(context.Background(), "OpenVINO/missing", t.TempDir(), nil)
	require.ErrorContains(t, err, "404")
}

// Issue 11: a hostile hub streaming more bytes than it announced filled
// the disk. The download stops at the announced size.
func TestDownloadStopsAtTheAnnouncedSize(t *testing.T) {
	hub, srv := newFakeHub(t)
	hub.oversize["openvino_model.bin"] = true
	dir := t.TempDir()
	err := client(srv).Download(context.Background(), repo, dir, nil)
	require.ErrorIs(t, err, ErrTooLarge)
	var biggest int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			biggest = max(biggest, info.Size())
		}
		return nil
	})
	assert.LessOrEqual(t, biggest, int64(large), "nothing was written past the announced size")
	assert.Equal(t, 1, hub.requests["openvino_model.bin"], "not retried: it would only repeat")
}

// Issue 11: files were fetched at main while main could move: the pull
// fetches every file at the commit it listed.
func TestDownloadPinsTheRevisionItListed(t *testing.T) {
	hub, srv := newFakeHub(t)
	newer := map[string][]byte{}
	for p, b := range hub.files {
		newer[p] = append(bytes.ToUpper(b), '!')
	}
	hub.revs[rev2] = newer
	hub.onList = func() { // main moves on while the pull is under way
		hub.mu.Lock()
		hub.main = rev2
		hub.mu.Unlock()
	}
	dir := t.TempDir()
	require.NoError(t, client(srv).Download(context.Background(), repo, dir, nil))
	for p, want := range hub.files {
		got, err := os.ReadFile(filepath.Join(dir, "tiny-ov", filepath.FromSlash(p)))
		require.NoError(t, err)
		assert.Equal(t, want, got, "%s is from the listed commit", p)
	}
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
