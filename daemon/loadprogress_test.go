package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/compilecache"
	"github.com/npud/npud/npu/sim"
)

// compilingEngine stands for OpenVINO on an NPU as far as loading goes: a
// load blocks until the test releases it, and a load that finds no blob
// of its own in the cache folder compiles, leaving one (OpenVINO's
// `<hash>.blob`); one that finds it imports it.
type compilingEngine struct {
	npu.Engine
	cacheDir string
	started  chan string   // a load began
	release  chan struct{} // the test lets one load finish

	mu       sync.Mutex
	compiled int
}

func newCompilingEngine(cacheDir string) *compilingEngine {
	return &compilingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond}), cacheDir: cacheDir,
		started: make(chan string, 8), release: make(chan struct{})}
}

func (e *compilingEngine) Name() string    { return "compiling" }
func (e *compilingEngine) Simulated() bool { return false }
func (e *compilingEngine) Describe() npu.Features {
	return npu.Features{LoadsModels: true}
}

func (e *compilingEngine) Load(ctx context.Context, model string) error {
	e.started <- model
	select {
	case <-e.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	blob := filepath.Join(e.cacheDir, "0f1e2d3c4b5a6978-"+model+".blob")
	if _, err := os.Stat(blob); err == nil {
		return nil // imported
	}
	e.mu.Lock()
	e.compiled++
	e.mu.Unlock()
	return os.WriteFile(blob, []byte("compiled"), 0o600)
}

func (e *compilingEngine) Unload(string) error { return nil }

func (e *compilingEngine) compiles() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.compiled
}

// lines reads a streaming response line by line in the background.
func lines(t *testing.T, resp *http.Response) <-chan string {
	t.Helper()
	out := make(chan string, 256)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	return out
}

// waitLine returns the first line that contains want, failing on the end
// of the stream or after 10 s without it.
func waitLine(t *testing.T, from <-chan string, want string) string {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-from:
			if !ok {
				t.Fatalf("the stream ended without a line containing %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-limit:
			t.Fatalf("no line containing %q within 10 s", want)
		}
	}
}

func postStream(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

type psLoading struct {
	Loading []struct {
		Name         string `json:"name"`
		Status       string `json:"status"`
		FirstCompile bool   `json:"first_compile"`
	} `json:"loading"`
	Models []struct {
		Name string `json:"name"`
	} `json:"models"`
}

// Issue 24, item 5: while a model compiles for the first time, every
// client waiting on it hears so on its stream (OpenAI: SSE comments;
// Ollama: "status" on the keep-alive chunks; `npud ps`, the status and
// /api/ps list the load); a later start that finds the compiled blob in
// the cache folder says it loads the compiled model instead.
func TestFirstCompileProgressReachesWaitingClients(t *testing.T) {
	cacheDir := t.TempDir()
	start := func(e *compilingEngine) *daemontest.Server {
		cfg := daemontest.Defaults(t)
		cfg.CacheDir, cfg.Device, cfg.Heartbeat = cacheDir, "NPU", 10*time.Millisecond
		return daemontest.Start(t, cfg, e)
	}
	engine := newCompilingEngine(cacheDir)
	srv := start(engine)

	openai := lines(t, postStream(t, srv.URL+"/v1/chat/completions",
		`{"model":"sim","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`))
	assert.Equal(t, "sim", <-engine.started)
	ollama := lines(t, postStream(t, srv.URL+"/api/chat", `{"model":"sim","options":{"num_predict":3},"messages":[{"role":"user","content":"hi"}]}`))
	wctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(wctx, strings.Replace(srv.URL, "http", "ws", 1)+"/npud/v1/streams", nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, ws.Write(wctx, websocket.MessageText,
		[]byte(`{"type":"start","request_id":"ws1","model":"sim","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)))
	// Read all along: the server pings every heartbeat (10 ms here), and
	// a client answers pings only while it reads.
	wsMessages := make(chan string, 256)
	go func() {
		defer close(wsMessages)
		for {
			_, data, err := ws.Read(wctx)
			if err != nil {
				return
			}
			wsMessages <- string(data)
		}
	}()
	wsNext := func() string {
		t.Helper()
		for {
			select {
			case m, ok := <-wsMessages:
				require.True(t, ok, "the WebSocket closed")
				if !strings.Contains(m, `"type":"started"`) {
					return m
				}
			case <-wctx.Done():
				t.Fatal("no WebSocket message within 20 s")
			}
		}
	}
	var wsStatus struct{ Type, Status string }
	require.NoError(t, json.Unmarshal([]byte(wsNext()), &wsStatus))
	assert.Equal(t, "status", wsStatus.Type)
	assert.Contains(t, wsStatus.Status, `loading model "sim": compiling for NPU (first time)… `)

	comment := waitLine(t, openai, `: loading model "sim": compiling for NPU (first time)… `)
	assert.True(t, strings.HasPrefix(comment, ": "), "an SSE comment, which clients skip: %q", comment)
	var chunk struct {
		Status  string `json:"status"`
		Done    bool   `json:"done"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal([]byte(waitLine(t, ollama, `compiling for NPU (first time)`)), &chunk))
	assert.Contains(t, chunk.Status, `loading model "sim": compiling for NPU (first time)… `)
	assert.False(t, chunk.Done)
	assert.Empty(t, chunk.Message.Content, "an empty keep-alive chunk every Ollama client accepts")

	var ps psLoading
	getJSON(t, srv.URL+"/api/ps", &ps)
	require.Len(t, ps.Loading, 1)
	assert.Equal(t, "sim", ps.Loading[0].Name)
	assert.Equal(t, "compiling for NPU (first time)", ps.Loading[0].Status)
	assert.True(t, ps.Loading[0].FirstCompile)
	assert.Empty(t, ps.Models, "not loaded yet")
	code, out, errOut := npud(t, "", "ps", "--host="+srv.URL)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `sim\s+-\s+-\s+-\s+compiling for NPU \(first time\)… \d+ s`, out)
	var status struct {
		Loading []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			FirstCompile bool   `json:"first_compile"`
		} `json:"loading"`
	}
	getJSON(t, srv.URL+daemon.StatusPath, &status)
	require.Len(t, status.Loading, 1)
	assert.Equal(t, "compiling for NPU (first time)", status.Loading[0].Status)

	close(engine.release) // the compile ends: the answers stream
	waitLine(t, openai, "data: [DONE]")
	waitLine(t, ollama, `"done":true`)
	for m := wsNext(); !strings.Contains(m, `"type":"final"`); m = wsNext() {
		require.NotContains(t, m, `"type":"error"`)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	ps = psLoading{}
	getJSON(t, srv.URL+"/api/ps", &ps)
	assert.Empty(t, ps.Loading)
	assert.Len(t, ps.Models, 1, "loaded")
	assert.Equal(t, 1, engine.compiles())
	index, err := os.ReadFile(filepath.Join(cacheDir, compilecache.IndexFile))
	require.NoError(t, err)
	assert.Contains(t, string(index), "0f1e2d3c4b5a6978-sim.blob", "the blob the compile left is the model's")
	require.NoError(t, srv.Stop())

	// The next start finds the blob: no first compile.
	engine = newCompilingEngine(cacheDir)
	srv = start(engine)
	openai = lines(t, postStream(t, srv.URL+"/v1/chat/completions",
		`{"model":"sim","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`))
	<-engine.started
	waitLine(t, openai, `: loading model "sim": loading the compiled model… `)
	ps = psLoading{}
	getJSON(t, srv.URL+"/api/ps", &ps)
	require.Len(t, ps.Loading, 1)
	assert.False(t, ps.Loading[0].FirstCompile)
	close(engine.release)
	waitLine(t, openai, "data: [DONE]")
	assert.Zero(t, engine.compiles(), "imported, not compiled")
}

// `npud run` shows the load's progress while the model compiles, then the
// answer alone on stdout.
func TestRunShowsTheFirstCompile(t *testing.T) {
	cacheDir := t.TempDir()
	cfg := daemontest.Defaults(t)
	cfg.CacheDir, cfg.Device, cfg.Heartbeat = cacheDir, "NPU", 10*time.Millisecond
	engine := newCompilingEngine(cacheDir)
	srv := daemontest.Start(t, cfg, engine)

	stderr := &watchedWriter{want: `loading model "sim": compiling for NPU (first time)… `, seen: make(chan struct{})}
	var stdout strings.Builder
	code := make(chan int, 1)
	go func() {
		code <- cli.MainIO(t.Context(), []string{"run", "--host=" + srv.URL, "sim", "hello"},
			func(string) string { return "" }, strings.NewReader(""), &stdout, stderr)
	}()
	<-engine.started
	select { // printed while the model still compiles
	case <-stderr.seen:
	case <-time.After(10 * time.Second):
		t.Fatalf("npud run said nothing of the compile: %q", stderr.String())
	}
	close(engine.release)
	require.Equal(t, 0, <-code, stderr.String())
	assert.Equal(t, sim.Text(0, "user: hello\n")+"\n", stdout.String(), "the answer alone on stdout")
}

// watchedWriter closes seen once what was written contains want.
type watchedWriter struct {
	want string
	seen chan struct{}

	mu  sync.Mutex
	buf strings.Builder
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

func (w *watchedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// notifySocket plays systemd's part: NOTIFY_SOCKET for this test, and the
// messages npud sends there, one at a time.
func notifySocket(t *testing.T) (next func() string, messages <-chan string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	t.Setenv("NOTIFY_SOCKET", sock)
	ch := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return func() string {
		t.Helper()
		select {
		case m := <-ch:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no message from npud")
			return ""
		}
	}, ch
}

// A preloaded model compiles before npud tells systemd READY, and the
// unit's status says it is a first compile (minutes on an NPU).
func TestPreloadCompilesBeforeReady(t *testing.T) {
	next, messages := notifySocket(t)
	cacheDir := t.TempDir()
	cfg := daemontest.Defaults(t)
	cfg.CacheDir, cfg.Device, cfg.Preload = cacheDir, "NPU", []string{"sim"}
	engine := newCompilingEngine(cacheDir)
	srv := daemontest.Start(t, cfg, engine)
	assert.Equal(t, "STATUS=preloading sim: compiling for NPU (first time)", next())
	assert.Equal(t, "sim", <-engine.started)
	assert.Contains(t, next(), "EXTEND_TIMEOUT_USEC=", "more start time while it compiles")
	select {
	case m := <-messages:
		t.Fatalf("npud said %q before the compile ended", m)
	default: // nothing more while the compile runs
	}
	close(engine.release)
	for m := next(); !strings.Contains(m, "READY=1"); m = next() {
		assert.Contains(t, m, "EXTEND_TIMEOUT_USEC=", "only extensions before READY")
	}
	var ps psLoading
	getJSON(t, srv.URL+"/api/ps", &ps)
	require.Len(t, ps.Models, 1, "READY comes with the model compiled")
	assert.Equal(t, 1, engine.compiles())
}

// Through the real engine: the GenAI test library, as an NPU, writes its
// compiled blob into CACHE_DIR as OpenVINO's core does; npud learns it at
// the first compile and says the next start loads the compiled model.
func TestOpenVINOFirstCompileThenCachedBlob(t *testing.T) {
	next, _ := notifySocket(t)
	models, cacheDir := t.TempDir(), t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "agent")
	t.Setenv("OVTEST_DEVICES", "NPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "NPU", cacheDir
	cfg.OpenVINOLib, cfg.Preload = daemontest.TestLibrary(t), []string{"agent"}

	readyWith := func() string {
		t.Helper()
		status := next()
		for m := next(); !strings.Contains(m, "READY=1"); m = next() {
		}
		return status
	}
	srv := daemontest.Start(t, cfg, nil)
	assert.Equal(t, "STATUS=preloading agent: compiling for NPU (first time)", readyWith())
	index, err := os.ReadFile(filepath.Join(cacheDir, compilecache.IndexFile))
	require.NoError(t, err)
	assert.Regexp(t, `"agent":\{"fingerprint":"[^"]+","blobs":\["ovtest_[0-9a-f]+\.blob"\]\}`, string(index))
	require.NoError(t, srv.Stop())
	for m := next(); !strings.Contains(m, "STOPPING=1"); m = next() {
	}

	daemontest.Start(t, cfg, nil)
	assert.Equal(t, "STATUS=preloading agent: loading the compiled model", readyWith())
}
