package daemon_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// Issue 37 item 2: a model served by an upstream gets the request's
// structured output in the upstream's own form, response_format, from
// every API's form of it: what the upstream received is asserted.
func TestUpstreamGetsTheStructuredOutput(t *testing.T) {
	const schema = `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`
	var mu sync.Mutex
	var got []map[string]json.RawMessage
	up := fakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		raw, _ := io.ReadAll(r.Body)
		if json.Unmarshal(raw, &body) == nil {
			mu.Lock()
			got = append(got, body)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunkLine(`{"a":1}`)+"data: [DONE]\n\n")
	})
	front := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Upstreams = []string{"far=" + up.URL + ";models=far;timeout=5s"}
	}, nil)
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"OpenAI json_schema", "/v1/chat/completions",
			`{"model":"far","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"A","strict":true,"schema":` + schema + `}}}`,
			`{"type":"json_schema","json_schema":{"name":"A","schema":` + schema + `,"strict":true}}`},
		{"OpenAI json_object", "/v1/chat/completions",
			`{"model":"far","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`,
			`{"type":"json_object"}`},
		{"Responses text.format", "/v1/responses",
			`{"model":"far","input":"x","text":{"format":{"type":"json_schema","name":"A","strict":false,"schema":` + schema + `}}}`,
			`{"type":"json_schema","json_schema":{"name":"A","schema":` + schema + `,"strict":false}}`},
		{"Ollama format schema", "/api/chat",
			`{"model":"far","stream":false,"messages":[{"role":"user","content":"x"}],"format":` + schema + `}`,
			`{"type":"json_schema","json_schema":{"name":"response","schema":` + schema + `,"strict":false}}`},
		{"Ollama format json", "/api/generate", `{"model":"far","stream":false,"prompt":"x","format":"json"}`, `{"type":"json_object"}`},
		{"Anthropic output_config.format", "/v1/messages",
			`{"model":"far","max_tokens":10,"messages":[{"role":"user","content":"x"}],"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}}`,
			`{"type":"json_schema","json_schema":{"name":"response","schema":` + schema + `,"strict":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			resp := post(t, front.URL+tc.path, tc.body)
			raw, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, got, 1)
			assert.JSONEq(t, tc.want, string(got[0]["response_format"]))
		})
	}
}

// Issue 37 item 2, through another npud: the back daemon's engine gets the
// front's request's Format.
func TestUpstreamNpudGetsTheFormat(t *testing.T) {
	var mu sync.Mutex
	var formats []*npu.Format
	backCfg := daemontest.Defaults(t)
	backCfg.Aliases = map[string]string{"big": "sim"}
	back := daemontest.Start(t, backCfg, sim.New(sim.Config{Faults: func(r *npu.Request) sim.Fault {
		mu.Lock()
		formats = append(formats, r.Format)
		mu.Unlock()
		return sim.Fault{}
	}}))
	front := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Upstreams = []string{"back=" + back.URL + ";models=big;timeout=5s"}
	}, nil)
	resp := post(t, front.URL+"/api/chat", `{"model":"big","stream":false,"messages":[{"role":"user","content":"x"}],"format":{"type":"object"}}`)
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, formats, 1)
	assert.Equal(t, &npu.Format{Type: npu.FormatJSONSchema, Name: "response", Schema: json.RawMessage(`{"type":"object"}`)}, formats[0])
}

// Issue 37 item 2: what an upstream answers to a structured request is
// held to the format like a local engine's: an answer that is no document
// of the schema is structured_output_failed, never passed on as valid.
func TestUpstreamAnswerIsHeldToTheFormat(t *testing.T) {
	up := fakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunkLine(`Sure! {"a": "one"}`)+"data: [DONE]\n\n")
	})
	front := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Upstreams = []string{"far=" + up.URL + ";models=far;timeout=5s"}
	}, nil)
	resp := post(t, front.URL+"/v1/chat/completions", `{"model":"far","messages":[{"role":"user","content":"x"}],`+
		`"response_format":{"type":"json_schema","json_schema":{"name":"A","schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}}`)
	raw, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"code":"structured_output_failed"`)
	assert.NotContains(t, string(raw), "Sure!")
}
