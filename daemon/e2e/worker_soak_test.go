//go:build cgo

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// The native faults the soak injects through the GenAI test library, in
// the engine's worker processes.
var workerFaults = []string{"", "", "", "OVTEST_CRASH", "OVTEST_ABORT", "OVTEST_HANG", "OVTEST_HANG_PREFILL"}

// Issue 15: streams on two models, on both APIs and the WebSocket, while
// the model "faulty" crashes, aborts and hangs its worker at random. Every
// stream that did not complete ends with its protocol's error terminator;
// every stream of the model "steady" completes with the engine's whole
// answer; afterwards no slot is held and no worker or goroutine is left.
func TestSoakWithWorkerFaults(t *testing.T) {
	daemontest.Integration(t, "the soak with worker faults")
	streams := envInt("NPUD_SOAK_WORKER_STREAMS", 60)
	models := t.TempDir()
	for _, m := range []string{"steady", "faulty"} {
		daemontest.WriteOpenVINOModel(t, models, m)
	}
	t.Setenv("OVTEST_DEVICES", "CPU")
	t.Setenv("OVTEST_TOKEN_DELAY_US", "500")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "CPU", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	cfg.Isolation = "process"
	// The watchdog's bounds are what tells a hung worker from a slow one:
	// a worker of "steady" starved of the CPU for a moment (a loaded
	// machine, every process under -race) must not be taken for hung, so
	// they are far above any gap a healthy worker shows under load (its
	// tokens are 0.5 ms apart), and each hang costs the soak that long.
	cfg.TokenTimeout, cfg.PrefillTimeout, cfg.RestartBackoff = time.Second, time.Second, 5*time.Millisecond
	cfg.DeviceFailures = 1000 // the one device stays in use: this is about streams, not failover
	cfg.QueueTimeout, cfg.MaxQueue = time.Minute, 64
	cfg.Heartbeat = 0
	srv := daemontest.Start(t, cfg, nil)
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer hc.CloseIdleConnections()

	// What "steady" answers each prompt, whole: the reference.
	reference := map[string]string{}
	for i := range 4 {
		prompt := fmt.Sprintf("steady question %d", i)
		o := workerStream(t, hc, srv.URL, "openai", "steady", prompt)
		require.Equal(t, "complete", o.kind, "%+v", o)
		reference[prompt] = o.text
	}
	hc.CloseIdleConnections()
	goroutines := runtime.NumGoroutine()

	counts := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 15))
			for i := range jobs {
				api := []string{"openai", "ollama", "websocket"}[i%3]
				model, fault := "steady", ""
				prompt := fmt.Sprintf("steady question %d", rng.IntN(4))
				if i%2 == 1 {
					model, fault = "faulty", workerFaults[rng.IntN(len(workerFaults))]
					prompt = "faulty " + fault + " " + strconv.Itoa(i)
				}
				o := workerStream(t, hc, srv.URL, api, model, prompt)
				mu.Lock()
				counts[model+"/"+api+"/"+o.kind+"/"+o.code]++
				mu.Unlock()
				switch {
				case model == "steady":
					assert.Equal(t, "complete", o.kind, "%s %s: another model's faults cost nothing (%+v)", api, prompt, o)
					assert.Equal(t, reference[prompt], o.text, "%s %s: nothing lost", api, prompt)
				case fault == "":
					assert.Equal(t, "complete", o.kind, "%s %s: %+v", api, prompt, o)
				case o.kind == "refused":
					// A fault before the first token: the HTTP answer is the error.
					assert.Contains(t, o.code, "503", "%s %s", api, prompt)
				default:
					assert.Equal(t, "failed", o.kind, "%s %s: %+v", api, prompt, o)
					assert.True(t, o.terminal, "%s %s: the error terminator (%s)", api, prompt, o.code)
					assert.Contains(t, []string{"engine_crashed", "engine_hung"}, o.code, "%s %s", api, prompt)
				}
			}
		}()
	}
	for i := range streams {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	daemontest.Eventually(t, func() bool {
		h := daemontest.Health(t, http.DefaultClient, srv.URL)
		return h["active_streams"] == 0.0 && h["queued"] == 0.0
	})
	h := daemontest.Health(t, http.DefaultClient, srv.URL)
	t.Logf("worker soak: %d streams, %v worker restarts", streams, h["worker_restarts"])
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("  %-60s %d", k, counts[k])
	}
	assert.Positive(t, h["worker_restarts"], "faults happened")
	hc.CloseIdleConnections()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= goroutines+5 }, 10*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after", goroutines, runtime.NumGoroutine())
	// A worker the watchdog killed last may still be exiting: wait for it.
	require.Eventually(t, func() bool { return len(daemontest.ChildProcesses(t, os.Getpid())) <= 2 }, 10*time.Second, 20*time.Millisecond,
		"at most one worker per loaded model is left: %v", daemontest.ChildProcesses(t, os.Getpid()))
	require.NoError(t, srv.Stop())
	require.Eventually(t, func() bool { return len(daemontest.ChildProcesses(t, os.Getpid())) == 0 }, 10*time.Second, 20*time.Millisecond,
		"the workers end with the daemon: %v", daemontest.ChildProcesses(t, os.Getpid()))
}

// workerStream runs one stream to its end on api and says how it ended.
func workerStream(t *testing.T, hc *http.Client, base, api, model, prompt string) outcome {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if api == "websocket" {
		return websocketStream(ctx, base, model, prompt)
	}
	path := "/v1/chat/completions"
	body := fmt.Sprintf(`{"model":%q,"stream":true,"seed":7,"max_tokens":40,"messages":[{"role":"user","content":%q}]}`, model, prompt)
	if api == "ollama" {
		path = "/api/chat"
		body = fmt.Sprintf(`{"model":%q,"options":{"seed":7,"num_predict":40},"messages":[{"role":"user","content":%q}]}`, model, prompt)
	}
	resp, refused := postStream(ctx, hc, base+path, body)
	if resp == nil {
		return refused
	}
	defer resp.Body.Close()
	if api == "ollama" {
		return parseChat(resp.Body)
	}
	o := parseStream(api, resp.Body)
	return o
}

// parseChat reads an Ollama /api/chat stream.
func parseChat(r io.Reader) outcome {
	raw, err := io.ReadAll(r)
	if err != nil {
		return outcome{kind: "client_error", code: err.Error()}
	}
	var text strings.Builder
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	for i, line := range lines {
		switch {
		case strings.Contains(line, `"error"`):
			code := "engine_crashed"
			if strings.Contains(line, "hung") {
				code = "engine_hung"
			}
			return outcome{kind: "failed", text: text.String(), code: code, terminal: i == len(lines)-1}
		case strings.Contains(line, `"done":true`):
			return outcome{kind: "complete", text: text.String(), terminal: true}
		}
		if i := strings.Index(line, `"content":"`); i >= 0 {
			rest := line[i+len(`"content":"`):]
			if j := strings.Index(rest, `"`); j >= 0 {
				s, _ := strconv.Unquote(`"` + rest[:j] + `"`)
				text.WriteString(s)
			}
		}
	}
	return outcome{kind: "truncated", text: text.String()}
}

// websocketStream runs one generation over npud's WebSocket protocol.
func websocketStream(ctx context.Context, base, model, prompt string) outcome {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/npud/v1/streams", nil)
	if err != nil {
		return outcome{kind: "client_error", code: err.Error()}
	}
	defer func() { _ = conn.CloseNow() }()
	// Request ids are idempotency keys within the tenant: one per stream.
	id := fmt.Sprintf("soak-%d-%d", time.Now().UnixNano(), rand.Uint64())
	start := fmt.Sprintf(`{"type":"start","request_id":%q,"model":%q,"seed":7,"max_tokens":40,"messages":[{"role":"user","content":%q}]}`, id, model, prompt)
	if err := conn.Write(ctx, websocket.MessageText, []byte(start)); err != nil {
		return outcome{kind: "client_error", code: err.Error()}
	}
	var text strings.Builder
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return outcome{kind: "truncated", text: text.String(), code: err.Error()}
		}
		var m struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
			Code  string `json:"code"`
		}
		if json.Unmarshal(msg, &m) != nil {
			return outcome{kind: "garbled", code: string(msg)}
		}
		switch m.Type {
		case "token":
			text.WriteString(m.Delta)
		case "error":
			return outcome{kind: "failed", text: text.String(), code: m.Code, terminal: true}
		case "final":
			return outcome{kind: "complete", text: text.String(), terminal: true}
		}
	}
}
