package e2e

import (
	"bufio"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// The soak harness: thousands of streams against the simulated engine, with
// random client disconnects, slow readers, engine stalls and errors and a
// full queue, through both APIs. `make soak` runs the full size
// (NPUD_SOAK_STREAMS=5000); `go test` a small one.

type behaviour int

const (
	readAll     behaviour = iota // read to the end
	disconnect                   // drop the connection at a random point
	slowReader                   // read a little at a time, slowly
	engineStall                  // the engine pauses, then goes on
	engineHang                   // the engine stops producing: token timeout
	engineError                  // the engine fails mid-stream
	behaviours
)

func (b behaviour) String() string {
	return [...]string{"read_all", "disconnect", "slow_reader", "engine_stall", "engine_hang", "engine_error"}[b]
}

// soakFaults injects the engine faults a prompt asks for.
func soakFaults(r *npu.Request) sim.Fault {
	p := sim.PromptText(r)
	switch {
	case strings.Contains(p, "stall"):
		return sim.Fault{StallAtToken: 3, StallFor: 30 * time.Millisecond}
	case strings.Contains(p, "hang"):
		return sim.Fault{StallAtToken: 2}
	case strings.Contains(p, "fail"):
		return sim.Fault{ErrorAtToken: 4}
	}
	return sim.Fault{}
}

// outcome is how one stream ended, seen by its client.
type outcome struct {
	kind     string // complete, refused (HTTP error before the stream), failed (error terminator), dropped (we left)
	text     string
	code     string // error code when failed or refused
	terminal bool   // the protocol's terminator or error terminator was seen
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func rssKiB(t *testing.T) int {
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}

func TestSoak(t *testing.T) {
	daemontest.Integration(t, "the soak")
	runSoak(t, false, envInt("NPUD_SOAK_STREAMS", 300), envInt("NPUD_SOAK_CONCURRENCY", 32))
}

// Through Debian's nginx with its default proxy_buffering on.
func TestSoakThroughNginx(t *testing.T) {
	daemontest.Integration(t, "the soak through nginx")
	runSoak(t, true, envInt("NPUD_SOAK_STREAMS", 300)/3, 16)
}

func runSoak(t *testing.T, viaNginx bool, streams, concurrency int) {
	cfg := daemontest.Defaults(t)
	cfg.SimTTFT, cfg.SimITL = time.Millisecond, time.Millisecond
	cfg.MaxQueue = concurrency - 2 // one engine slot: now and then the queue is full
	cfg.QueueTimeout = 20 * time.Second
	cfg.TokenTimeout = 300 * time.Millisecond
	cfg.MaxPendingBytes = 2 << 10 // slow readers meet the hard limit
	cfg.Heartbeat = 0
	engine := sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL, Faults: soakFaults})
	srv := daemontest.Start(t, cfg, engine)
	base := srv.URL
	if viaNginx {
		base = startNginx(t, srv.URL)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, DisableCompression: true}}
	defer hc.CloseIdleConnections()

	// Warm up, then take the baseline.
	for range 3 {
		o := soakStream(t, hc, base, "openai", readAll, 1, 5, rand.New(rand.NewPCG(0, 0)))
		require.Equal(t, "complete", o.kind, "%+v", o)
	}
	hc.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	goroutines, rss := runtime.NumGoroutine(), rssKiB(t)

	type job struct {
		api  string
		b    behaviour
		seed int64
		max  int
	}
	jobs := make(chan job)
	counts := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for j := range jobs {
				o := soakStream(t, hc, base, j.api, j.b, j.seed, j.max, rng)
				verdict := checkOutcome(t, j.api, j.b, j.seed, j.max, o)
				mu.Lock()
				counts[j.b.String()+"/"+o.kind+verdict]++
				counts["api/"+j.api]++
				mu.Unlock()
				if o.kind == "refused" {
					time.Sleep(50 * time.Millisecond) // a client backing off
				}
			}
		}()
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(42, 42))
	for i := range streams {
		b := behaviour(rng.IntN(int(behaviours)))
		if rng.IntN(3) == 0 {
			b = readAll // most streams are ordinary
		}
		jobs <- job{api: []string{"openai", "ollama"}[i%2], b: b, seed: int64(i), max: 8 + rng.IntN(40)}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)

	// Afterwards: no engine slot held, nothing queued, goroutines and
	// memory back near the baseline.
	daemontest.Eventually(t, func() bool {
		h := daemontest.Health(t, http.DefaultClient, srv.URL)
		return h["active_streams"] == 0.0 && h["queued"] == 0.0
	})
	hc.CloseIdleConnections()
	var after int
	require.Eventually(t, func() bool {
		after = runtime.NumGoroutine()
		return after <= goroutines+5
	}, 10*time.Second, 20*time.Millisecond, "goroutines: %d before, %d after", goroutines, runtime.NumGoroutine())
	rssAfter := rssKiB(t)
	t.Logf("soak%s: %d streams, concurrency %d, %s; goroutines %d → %d; RSS %d → %d KiB",
		map[bool]string{true: " through nginx"}[viaNginx], streams, concurrency, elapsed.Round(time.Millisecond),
		goroutines, after, rss, rssAfter)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("  %-40s %d", k, counts[k])
	}
	assert.Less(t, rssAfter-rss, 256<<10, "resident memory grew by more than 256 MiB")
	if streams >= 90 {
		for _, want := range []string{"disconnect/dropped", "engine_error/failed", "engine_hang/failed", "engine_stall/complete"} {
			assert.Positive(t, counts[want], "no %s seen", want)
		}
	}
}

// soakPrompt names the fault the engine should inject.
func soakPrompt(b behaviour, seed int64) string {
	switch b {
	case engineStall:
		return fmt.Sprintf("stall %d", seed)
	case engineHang:
		return fmt.Sprintf("hang %d", seed)
	case engineError:
		return fmt.Sprintf("fail %d", seed)
	}
	return fmt.Sprintf("soak %d", seed)
}

// expected is what the simulated engine produces for a soak request.
func expected(api string, b behaviour, seed int64, maxTokens int) string {
	prompt := soakPrompt(b, seed)
	if api == "openai" {
		prompt = "user: " + prompt + "\n"
	}
	tokens := sim.Tokens(seed, prompt)
	if maxTokens < len(tokens) {
		tokens = tokens[:maxTokens]
	}
	return strings.Join(tokens, "")
}

// soakStream runs one stream with behaviour b and reports how it ended.
func soakStream(t *testing.T, hc *http.Client, base, api string, b behaviour, seed int64, maxTokens int, rng *rand.Rand) outcome {
	prompt := soakPrompt(b, seed)
	var path, body string
	if api == "openai" {
		path = "/v1/chat/completions"
		body = fmt.Sprintf(`{"model":"sim","stream":true,"seed":%d,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, seed, maxTokens, prompt)
	} else {
		path = "/api/generate"
		body = fmt.Sprintf(`{"model":"sim","stream":true,"prompt":%q,"options":{"seed":%d,"num_predict":%d}}`, prompt, seed, maxTokens)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, refused := postStream(ctx, hc, base+path, body)
	if resp == nil {
		return refused
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	switch b {
	case disconnect:
		r = io.LimitReader(resp.Body, int64(1+rng.IntN(600)))
	case slowReader:
		r = &slowBody{r: resp.Body}
	}
	o := parseStream(api, r)
	if b == disconnect && !o.terminal {
		cancel() // drop the connection
		return outcome{kind: "dropped"}
	}
	return o
}

// postStream sends a streaming request. Without a 200 it returns no
// response and the outcome: a client error, or the refusal with its status
// and body.
func postStream(ctx context.Context, hc *http.Client, url, body string) (*http.Response, outcome) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, outcome{kind: "client_error", code: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, outcome{kind: "client_error", code: err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return nil, outcome{kind: "refused", code: strconv.Itoa(resp.StatusCode) + " " + string(raw), terminal: true}
	}
	return resp, outcome{}
}

// slowBody reads a few bytes at a time with pauses: a client on a slow
// link.
type slowBody struct {
	r io.Reader
	n int
}

func (s *slowBody) Read(p []byte) (int, error) {
	s.n++
	if s.n%4 == 0 {
		time.Sleep(2 * time.Millisecond)
	}
	return s.r.Read(p[:min(len(p), 64)])
}

func parseStream(api string, r io.Reader) outcome {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var text strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if api == "openai" {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				return outcome{kind: "complete", text: text.String(), terminal: true}
			}
			var chunk struct {
				Choices []struct {
					Delta struct{ Content string }
				}
				Error *struct{ Code string }
			}
			if json.Unmarshal([]byte(data), &chunk) != nil {
				return outcome{kind: "garbled", code: data}
			}
			if chunk.Error != nil {
				o := outcome{kind: "failed", text: text.String(), code: chunk.Error.Code}
				// The error event must be followed by [DONE].
				for sc.Scan() {
					if sc.Text() == "data: [DONE]" {
						o.terminal = true
					}
				}
				return o
			}
			if len(chunk.Choices) > 0 {
				text.WriteString(chunk.Choices[0].Delta.Content)
			}
			continue
		}
		var l struct {
			Response string
			Done     bool
			Error    string
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			return outcome{kind: "garbled", code: line}
		}
		if l.Error != "" {
			return outcome{kind: "failed", text: text.String(), code: l.Error, terminal: !sc.Scan()}
		}
		text.WriteString(l.Response)
		if l.Done {
			return outcome{kind: "complete", text: text.String(), terminal: true}
		}
	}
	return outcome{kind: "truncated", text: text.String()}
}

// checkOutcome asserts what each behaviour may end with, and returns a
// suffix for the counts.
func checkOutcome(t *testing.T, api string, b behaviour, seed int64, maxTokens int, o outcome) string {
	want := expected(api, b, seed, maxTokens)
	switch o.kind {
	case "complete":
		assert.Equal(t, want, o.text, "%s %s seed %d: a completed stream is byte-identical to the engine's output", api, b, seed)
		assert.NotEqual(t, engineHang, b, "a hung engine cannot complete")
		assert.NotEqual(t, engineError, b, "a failing engine cannot complete")
	case "failed":
		assert.True(t, o.terminal, "%s %s: the error event ends the stream properly (%s)", api, b, o.code)
		assert.True(t, strings.HasPrefix(want, o.text), "%s %s: text before the error is a prefix of the engine's", api, b)
		if b == readAll || b == engineStall {
			t.Errorf("%s %s seed %d failed: %s", api, b, seed, o.code)
		}
	case "refused":
		assert.Contains(t, o.code, "503", "%s %s: only a full queue refuses a stream here", api, b)
		return "(" + strings.Fields(o.code)[0] + ")"
	case "dropped":
		assert.Equal(t, disconnect, b)
	default:
		t.Errorf("%s %s seed %d: %s %q", api, b, seed, o.kind, o.code)
	}
	return ""
}
