package ollamaapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// wireFixture is a real server and a raw client for byte-level checks.
type wireFixture struct {
	*daemontest.Client
	url string
	hc  *http.Client
}

func newWire(t *testing.T, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *wireFixture {
	t.Helper()
	c := daemontest.NewClient(t, daemontest.StartEngine(t, mutate, faults).URL)
	return &wireFixture{Client: c, url: c.URL, hc: c.HTTP}
}

// do sends body and returns the response with its whole body, read and
// closed (daemontest.Client.Do).
//
//bodyclose:handled
func (f *wireFixture) do(t *testing.T, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return f.Do(t, method, path, body, header...)
}

// ndjson checks the framing (one JSON object per line, no blank lines, a
// final newline) and decodes every line.
func ndjson(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	require.True(t, bytes.HasSuffix(raw, []byte("\n")), "the last object ends with a newline")
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		require.NotEmpty(t, line, "no blank lines")
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &obj), "line %q", line)
		out = append(out, obj)
	}
	return out
}

// checkObjects applies the rules every generate or chat line follows and
// returns the text and the final object (nil when the stream failed).
func checkObjects(t *testing.T, objs []map[string]any, chat bool) (text string, final, errObj map[string]any) {
	t.Helper()
	for i, o := range objs {
		if e, ok := o["error"]; ok {
			require.Equal(t, len(objs)-1, i, "an error line is the last line")
			assert.IsType(t, "", e)
			return text, nil, o
		}
		assert.Equal(t, "sim", o["model"])
		created, _ := o["created_at"].(string)
		_, err := time.Parse(time.RFC3339Nano, created)
		assert.NoError(t, err, "created_at is RFC 3339")
		assert.True(t, strings.HasSuffix(created, "Z"), "created_at is UTC")
		if chat {
			msg, ok := o["message"].(map[string]any)
			require.True(t, ok, "every chat line carries message")
			assert.Equal(t, "assistant", msg["role"])
			text += msg["content"].(string)
		} else {
			resp, ok := o["response"].(string)
			require.True(t, ok, "every generate line carries response")
			text += resp
		}
		if o["done"] == true {
			require.Equal(t, len(objs)-1, i, "the done object is the last line")
			final = o
		} else {
			assert.Equal(t, false, o["done"])
		}
	}
	require.NotNil(t, final, "a stream ends with done: true")
	for _, k := range []string{"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
		v, ok := final[k].(float64)
		require.True(t, ok, "%s is present", k)
		assert.Equal(t, v, float64(int64(v)), "%s is an integer", k)
	}
	return text, final, nil
}

func TestWireNDJSONStreams(t *testing.T) {
	daemontest.SimOnly(t, "compares with the simulated answer")
	f := newWire(t, nil, nil)
	tests := []struct {
		name, path, body, prompt string
		chat                     bool
	}{
		{"generate", "/api/generate", `{"model":"sim","prompt":"hello","options":{"seed":3,"num_predict":5}}`, "hello", false},
		{"chat", "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"hello"}],"options":{"seed":3,"num_predict":5}}`, "user: hello\n", true},
		{"name alias", "/api/generate", `{"name":"sim","prompt":"hello","options":{"seed":3,"num_predict":5}}`, "hello", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.do(t, http.MethodPost, tc.path, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			assert.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
			assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
			objs := ndjson(t, raw)
			assert.Greater(t, len(objs), 2, "streams by default")
			text, final, _ := checkObjects(t, objs, tc.chat)
			assert.Equal(t, strings.Join(sim.Tokens(3, tc.prompt)[:5], ""), text)
			assert.Equal(t, "length", final["done_reason"])
			assert.EqualValues(t, 5, final["eval_count"])
			assert.EqualValues(t, sim.CountTokens(tc.prompt), final["prompt_eval_count"])
			for _, o := range objs {
				assert.NotContains(t, o, "error", "no error key on normal lines")
			}
		})
	}
}

func TestWireMidStreamErrorLine(t *testing.T) {
	f := newWire(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: 3} })
	for _, path := range []string{"/api/generate", "/api/chat"} {
		body := `{"model":"sim","prompt":"p"}`
		if path == "/api/chat" {
			body = `{"model":"sim","messages":[{"role":"user","content":"p"}]}`
		}
		resp, raw := f.do(t, http.MethodPost, path, body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		objs := ndjson(t, raw)
		_, final, errObj := checkObjects(t, objs, path == "/api/chat")
		assert.Nil(t, final, "no done line after an error")
		require.NotNil(t, errObj)
		assert.Contains(t, errObj["error"], "simulated fault")
		assert.Len(t, errObj, 1, "the error line is only {\"error\": ...}")
	}
}

func TestWireSSEWhenAsked(t *testing.T) {
	daemontest.SimOnly(t, "compares with the simulated answer")
	f := newWire(t, nil, nil)
	resp, raw := f.do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"x","options":{"num_predict":3}}`,
		"Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var objs []map[string]any
	for _, block := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		require.True(t, strings.HasPrefix(block, "data: "), "block %q", block)
		var o map[string]any
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(block, "data: ")), &o))
		objs = append(objs, o)
	}
	text, final, _ := checkObjects(t, objs, false)
	assert.Equal(t, strings.Join(sim.Tokens(0, "x")[:3], ""), text)
	assert.Equal(t, true, final["done"])
}

func TestWireHeartbeatsAreEmptyChunksWhileQueued(t *testing.T) {
	f := newWire(t, func(c *daemon.Config) { c.Heartbeat = 20 * time.Millisecond },
		func(r *npu.Request) sim.Fault {
			if r.Prompt == "hog" {
				return sim.Fault{StallAtToken: 2, StallFor: 300 * time.Millisecond}
			}
			return sim.Fault{}
		})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"hog","options":{"num_predict":3}}`)
	}()
	require.Eventually(t, func() bool { return daemontest.Health(t, f.hc, f.url)["active_streams"] == float64(1) },
		10*time.Second, 5*time.Millisecond)
	_, raw := f.do(t, http.MethodPost, "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"q"}],"options":{"num_predict":2}}`)
	objs := ndjson(t, raw)
	text, _, _ := checkObjects(t, objs, true)
	empty := 0
	for _, o := range objs[:len(objs)-1] {
		if o["message"].(map[string]any)["content"] == "" {
			empty++
		}
	}
	assert.GreaterOrEqual(t, empty, 2, "empty chunks kept the stream alive while queued")
	assert.Equal(t, strings.Join(sim.Tokens(0, "user: q\n")[:2], ""), text)
	<-done
}

func TestWireQueueFullIs503(t *testing.T) {
	f := newWire(t, func(c *daemon.Config) { c.MaxQueue, c.Heartbeat = 0, 20*time.Millisecond },
		func(r *npu.Request) sim.Fault {
			if r.Prompt == "hog" {
				return sim.Fault{StallAtToken: 2}
			}
			return sim.Fault{}
		})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/api/generate", strings.NewReader(`{"model":"sim","prompt":"hog"}`))
	hog, err := f.hc.Do(req)
	require.NoError(t, err)
	defer hog.Body.Close()

	resp, raw := f.do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"x"}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	var e map[string]any
	require.NoError(t, json.Unmarshal(raw, &e))
	assert.Contains(t, e["error"], "queue full")
	cancel()
}

func TestWireOtherEndpoints(t *testing.T) {
	f := newWire(t, nil, nil)
	_, raw := f.do(t, http.MethodGet, "/", "")
	assert.Equal(t, "Ollama is running", string(raw))
	resp, raw := f.do(t, http.MethodHead, "/", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, raw)

	resp, raw = f.do(t, http.MethodPost, "/api/pull", `{"name":"sim"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	objs := ndjson(t, raw)
	assert.Equal(t, "success", objs[len(objs)-1]["status"])

	resp, raw = f.do(t, http.MethodGet, "/api/ps", "")
	assert.JSONEq(t, `{"models":[]}`, string(raw))
	_ = resp
}

func TestWireBadInput(t *testing.T) {
	f := newWire(t, func(c *daemon.Config) { c.MaxBodyBytes = 4096 }, nil)
	tests := []struct {
		name, path, body string
		status           int
		has              string
	}{
		{"invalid JSON", "/api/generate", `{"model":"sim",`, 400, "unexpected end of JSON input"},
		{"body over the limit", "/api/generate", `{"model":"sim","prompt":"` + strings.Repeat("p", 5000) + `"}`, 413, "4096"},
		{"missing model", "/api/generate", `{"prompt":"x"}`, 400, "model is required"},
		{"unknown model", "/api/chat", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "gpt-9"},
		{"prompt of the wrong type", "/api/generate", `{"model":"sim","prompt":5}`, 400, "prompt"},
		{"messages of the wrong type", "/api/chat", `{"model":"sim","messages":"hi"}`, 400, "messages"},
		{"option of the wrong type", "/api/generate", `{"model":"sim","prompt":"x","options":{"temperature":"hot"}}`, 400, `"temperature"`},
		{"temperature out of range", "/api/generate", `{"model":"sim","prompt":"x","options":{"temperature":3}}`, 400, `"temperature"`},
		// GenAI's own bounds (npu.Request.Validate), as on the OpenAI API.
		{"top_p 0", "/api/generate", `{"model":"sim","prompt":"x","options":{"top_p":0}}`, 400, `"top_p"`},
		{"min_p 1", "/api/generate", `{"model":"sim","prompt":"x","options":{"min_p":1}}`, 400, `"min_p"`},
		{"repeat_penalty 0", "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"x"}],"options":{"repeat_penalty":0}}`, 400, `"repeat_penalty"`},
		{"NUL in the prompt", "/api/generate", `{"model":"sim","prompt":"a\u0000b"}`, 400, "NUL"},
		{"NUL in a message", "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"a\u0000b"}]}`, 400, "messages[0].content"},
		{"num_predict 0", "/api/generate", `{"model":"sim","prompt":"x","options":{"num_predict":0}}`, 400, "num_predict"},
		{"num_ctx too large", "/api/generate", `{"model":"sim","prompt":"x","options":{"num_ctx":999999}}`, 400, "num_ctx"},
		{"invalid UTF-8", "/api/generate", "{\"model\":\"sim\",\"prompt\":\"\xff\"}", 400, "UTF-8"},
		{"images in chat", "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"x","images":["aGk="]}]}`, 400, "images"},
		{"tool without a name", "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, 400, "tools[0].function.name"},
		{"tools on generate", "/api/generate", `{"model":"sim","prompt":"x","tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "/api/chat"},
		{"tool call arguments not an object", "/api/chat", `{"model":"sim","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`, 400, "arguments must be an object"},
		{"another role", "/api/chat", `{"model":"sim","messages":[{"role":"function","content":"x"}]}`, 400, "function"},
		{"think of another kind", "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"x"}],"think":"very"}`, 400, "think must be true, false"},
		{"bad keep_alive", "/api/generate", `{"model":"sim","prompt":"x","keep_alive":"soon"}`, 400, "keep_alive"},
		// Issue 12, item 8: NaN, infinite and huge keep_alive meant forever or wrapped around.
		{"keep_alive NaN", "/api/generate", `{"model":"sim","prompt":"x","keep_alive":"NaN"}`, 400, "keep_alive"},
		{"keep_alive Inf", "/api/generate", `{"model":"sim","prompt":"x","keep_alive":"+Inf"}`, 400, "keep_alive"},
		{"keep_alive huge", "/api/generate", `{"model":"sim","prompt":"x","keep_alive":1e300}`, 400, "keep_alive"},
		{"keep_alive huge string", "/api/chat", `{"model":"sim","messages":[],"keep_alive":"1e20"}`, 400, "keep_alive"},
		{"embed for an unknown model", "/api/embed", `{"model":"nope","input":"x"}`, 404, "nope"},
		{"embed input of the wrong type", "/api/embed", `{"model":"sim","input":5}`, 400, "input"},
		{"copy without destination", "/api/copy", `{"source":"sim"}`, 400, "destination"},
		{"unknown path", "/api/nothing", `{}`, 404, "no route"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.do(t, http.MethodPost, tc.path, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", raw)
			assert.Contains(t, resp.Header.Get("Content-Type"), "application/json")
			var e map[string]any
			require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
			assert.Len(t, e, 1, "Ollama's error shape is {\"error\": \"...\"}")
			msg, _ := e["error"].(string)
			assert.Contains(t, msg, tc.has)
		})
	}
	resp, raw := f.do(t, http.MethodGet, "/api/generate", "")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Contains(t, string(raw), `"error"`)

	// Unknown options are ignored, as clients still send retired ones.
	resp, raw = f.do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"x","stream":false,"options":{"num_gpu":1,"mirostat":2,"num_predict":2}}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
}

// noEmbedEngine is the simulated engine without embeddings.
type noEmbedEngine struct{ npu.Engine }

func (e noEmbedEngine) Describe() npu.Features {
	f := e.Engine.Describe()
	f.Embeds = false
	return f
}

func (noEmbedEngine) Embed(ctx context.Context, model string, inputs []string, truncate bool) (npu.Embedded, error) {
	return npu.Unsupported{}.Embed(ctx, model, inputs, truncate)
}

func TestWireEmbeddings(t *testing.T) {
	daemontest.SimOnly(t, "compares with the simulated answer")
	f := newWire(t, nil, nil)
	resp, raw := f.do(t, http.MethodPost, "/api/embed", `{"model":"sim","input":"hello"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Equal(t, "true", resp.Header.Get("X-Npud-Simulated"), "simulated vectors say so")
	var out struct {
		Model      string      `json:"model"`
		Embeddings [][]float32 `json:"embeddings"`
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.Equal(t, [][]float32{sim.Embedding("hello")}, out.Embeddings)

	cfg := daemontest.Defaults(t)
	plain := daemontest.NewClient(t, daemontest.Start(t, cfg, noEmbedEngine{sim.New(sim.Config{})}).URL)
	resp, raw = plain.Do(t, http.MethodPost, "/api/embed", `{"model":"sim","input":"hello"}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `model \"sim\" does not support embeddings`)
}

// Issue 12, item 7: a small body listing many inputs asked for a huge
// answer and held the engine; the count is bounded.
func TestWireEmbeddingInputsAreBounded(t *testing.T) {
	f := newWire(t, func(c *daemon.Config) { c.MaxEmbedInputs = 3 }, nil)
	resp, raw := f.do(t, http.MethodPost, "/api/embed", `{"model":"sim","input":["a","b","c","d"]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "at most 3")
	assert.Contains(t, string(raw), `"error"`)
	// At the bound the count is no longer the objection (an engine without
	// embeddings still refuses, for its own reason).
	_, raw = f.do(t, http.MethodPost, "/api/embed", `{"model":"sim","input":["a","b","c"]}`)
	assert.NotContains(t, string(raw), "max-embed-inputs", "%s", raw)
	assert.NotContains(t, string(raw), "at most", "%s", raw)
}
