package ollamaapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/ollama/ollama/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/jsonschema"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/ollamaapi"
)

// Issue 37: Ollama's format ("json" or a JSON Schema; "" and null for
// none) reaches the engine as the request's Format on /api/chat and
// /api/generate, streamed and whole, over a real server (it was a 400);
// every other form is a 400 naming format.
func TestFormatReachesTheEngine(t *testing.T) {
	const schema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	var mu sync.Mutex
	var got []*npu.Format
	srv := daemontest.StartSim(t, nil, func(r *npu.Request) sim.Fault {
		mu.Lock()
		got = append(got, r.Format)
		mu.Unlock()
		return sim.Fault{}
	})
	c := daemontest.NewClient(t, srv.URL)
	chat := func(stream bool, format string) string {
		s := `{"model":"sim","stream":false,"messages":[{"role":"user","content":"who?"}],"format":` + format + `}`
		if stream {
			s = strings.Replace(s, `"stream":false`, `"stream":true`, 1)
		}
		return s
	}
	for _, tc := range []struct {
		name, path, body string
		want             *npu.Format
		refusal          string // "" when accepted
	}{
		{"chat schema", "/api/chat", chat(false, schema), &npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(schema)}, ""},
		{"chat schema streamed", "/api/chat", chat(true, schema), &npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(schema)}, ""},
		{"chat json", "/api/chat", chat(false, `"json"`), &npu.Format{Type: npu.FormatJSONObject}, ""},
		{"chat empty", "/api/chat", chat(false, `""`), nil, ""},
		{"chat null", "/api/chat", chat(false, `null`), nil, ""},
		{"generate json", "/api/generate", `{"model":"sim","stream":false,"prompt":"who?","format":"json"}`, &npu.Format{Type: npu.FormatJSONObject}, ""},
		{"generate schema streamed", "/api/generate", `{"model":"sim","prompt":"who?","format":` + schema + `}`, &npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(schema)}, ""},
		{"another string", "/api/chat", chat(false, `"yaml"`), nil, `format must be \"json\" or a JSON schema object, got \"yaml\"`},
		{"an array", "/api/chat", chat(false, `[1]`), nil, `format must be \"json\" or a JSON schema object, got array`},
		{"true", "/api/generate", `{"model":"sim","prompt":"x","format":true}`, nil, `got bool`},
		{"a schema too large", "/api/chat", chat(false, `{"description":"`+strings.Repeat("x", npu.MaxSchemaBytes)+`"}`), nil, "format: the schema is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			resp, raw := c.Do(t, http.MethodPost, tc.path, tc.body)
			if tc.refusal != "" {
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
				assert.Contains(t, string(raw), tc.refusal)
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0])
		})
	}
}

// Issue 37: the router's refusal of a schema (a keyword npud cannot hold
// an answer to) is a 400 naming format and the keyword.
func TestSchemaRefusalNamesFormat(t *testing.T) {
	gin.SetMode(gin.TestMode)
	router := gin.New()
	refusal := &npu.InvalidRequestError{Param: npu.FormatParam, Message: `unsupported keyword "patternProperties" at /properties/a`}
	ollamaapi.New(&nputest.RefusingRouter{Err: refusal}, ollamaapi.Config{}, slog.New(slog.DiscardHandler)).Register(router)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, "/api/chat",
		`{"model":"local","stream":false,"messages":[{"role":"user","content":"hi"}],"format":{"type":"object"}}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.JSONEq(t, `{"error":"format: unsupported keyword \"patternProperties\" at /properties/a"}`, string(raw))
}

// Issue 37: the official Ollama Go client's format (a JSON Schema, as
// format=Model.model_json_schema() sends it, and "json"), on /api/chat
// streamed and /api/generate whole: the answers are documents valid
// against the schema, on the simulated engine.
func TestOllamaGoClientFormat(t *testing.T) {
	const schema = `{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer","minimum":0},
		"districts":{"type":"array","items":{"type":"string"},"maxItems":3},"coastal":{"type":"boolean"}},
		"required":["city","population","districts","coastal"]}`
	compiled, err := jsonschema.Compile([]byte(schema))
	require.NoError(t, err)
	f := newClientFixture(t, nil, nil)
	for seed := range 4 {
		var chat strings.Builder
		var last api.ChatResponse
		require.NoError(t, f.client.Chat(testContext(t), &api.ChatRequest{Model: "sim", Format: json.RawMessage(schema),
			Options:  map[string]any{"seed": seed},
			Messages: []api.Message{{Role: "user", Content: "Describe Oslo."}}}, func(r api.ChatResponse) error {
			chat.WriteString(r.Message.Content)
			last = r
			return nil
		}))
		require.NoError(t, compiled.Validate([]byte(chat.String())), "%s", chat.String())
		assert.Equal(t, "stop", last.DoneReason)

		var gen api.GenerateResponse
		require.NoError(t, f.client.Generate(testContext(t), &api.GenerateRequest{Model: "sim", Prompt: "Describe Oslo.",
			Format: json.RawMessage(schema), Stream: boolPtr(false), Options: map[string]any{"seed": seed}}, func(r api.GenerateResponse) error {
			gen = r
			return nil
		}))
		require.NoError(t, compiled.Validate([]byte(gen.Response)), "%s", gen.Response)
	}
	var out api.ChatResponse
	require.NoError(t, f.client.Chat(testContext(t), &api.ChatRequest{Model: "sim", Format: json.RawMessage(`"json"`), Stream: boolPtr(false),
		Messages: []api.Message{{Role: "user", Content: "Anything."}}}, func(r api.ChatResponse) error {
		out = r
		return nil
	}))
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.Message.Content), &obj), "JSON mode answers an object: %s", out.Message.Content)
}
