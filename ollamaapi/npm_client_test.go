package ollamaapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
)

// runJS runs one scenario of testdata/js/ollama_e2e.mjs (ollama-js)
// against base and decodes what it printed.
func runJS(t *testing.T, base, scenario string) map[string]any {
	t.Helper()
	return daemontest.RunJS(t, "ollama", "ollama_e2e.mjs", base, scenario)
}

func TestOllamaJSChatStreaming(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	r := runJS(t, srv.URL, "chatStream")
	assert.Equal(t, strings.Join(sim.Tokens(5, "user: hello from js\n")[:7], ""), r["text"])
	assert.Equal(t, true, r["done"])
	assert.Equal(t, "length", r["done_reason"])
	assert.EqualValues(t, 7, r["eval_count"])
	assert.Greater(t, r["parts"], 2.0)
}

func TestOllamaJSGenerateWhole(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	r := runJS(t, srv.URL, "generateWhole")
	assert.Equal(t, strings.Join(sim.Tokens(6, "js prompt")[:4], ""), r["text"])
	assert.Equal(t, true, r["done"])
	assert.EqualValues(t, 4, r["eval_count"])
}

func TestOllamaJSAbortCancelsTheEngine(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.SimITL = 50 * time.Millisecond
	engine := &nputest.RecordingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: cfg.SimITL})}
	srv := daemontest.Start(t, cfg, engine)
	r := runJS(t, srv.URL, "abortMidStream")
	assert.Equal(t, true, r["aborted"], "abort() ends the iteration with an AbortError")
	// abort() at the third part; parts the client had already buffered
	// may still be handed out before the AbortError (a loaded machine
	// reads several at once).
	parts, _ := r["parts"].(float64)
	assert.GreaterOrEqual(t, parts, 3.0)
	assert.LessOrEqual(t, parts, 5.0)

	hc := &http.Client{}
	require.Eventually(t, func() bool {
		return daemontest.Health(t, hc, srv.URL)["active_streams"] == float64(0)
	}, 10*time.Second, 5*time.Millisecond)
	statuses := engine.Statuses()
	require.NotEmpty(t, statuses)
	assert.Equal(t, npu.Cancel, statuses[len(statuses)-1], "the engine was cancelled")
	// Three parts were read; the engine may have produced a token or two
	// more before the abort reached it (one token interval), and the flush.
	assert.LessOrEqual(t, len(statuses), int(parts)+3, "the engine stopped within about one token interval of the abort")
}

func TestOllamaJSMidStreamErrorThrows(t *testing.T) {
	srv := daemontest.StartSim(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: 3} })
	r := runJS(t, srv.URL, "midStreamError")
	assert.Equal(t, true, r["thrown"], "ollama-js surfaces the error line as an exception")
	assert.Contains(t, r["message"], "simulated fault")
}

// Issue 16: ollama-js's thinking path: think: true, message.thinking apart
// from the content.
func TestOllamaJSThinking(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	r := runJS(t, srv.URL, "chatThinking")
	thoughts := sim.Reasoning(8, "user: think it through\n")
	assert.Equal(t, strings.TrimSpace(strings.Join(thoughts[1:len(thoughts)-2], "")), r["thinking"])
	assert.Equal(t, strings.TrimLeft(sim.Text(8, "user: think it through\n"), " "), r["text"])
}

// Issue 16: ollama-js's tool path, an agent loop on the engine under
// test: message.tool_calls with arguments as an object, the result back
// as a tool message with tool_name, then the answer.
func TestOllamaJSToolLoop(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runJS(t, srv.URL, "chatToolLoop")
	calls, _ := r["calls"].([]any)
	require.Len(t, calls, 1, "%v", r)
	call := calls[0].(map[string]any)
	assert.Equal(t, "get_weather", call["name"])
	args, ok := call["arguments"].(map[string]any)
	require.True(t, ok, "arguments are an object: %v", call["arguments"])
	assert.IsType(t, "", args["city"])
	assert.NotEmpty(t, r["answer"])
	assert.EqualValues(t, 2, r["rounds"])
	assert.Equal(t, "stop", r["doneReason"])
}
