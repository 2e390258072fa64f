package openaiapi_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/openaiapi"
)

// recorder keeps the engine requests a simulated engine was given.
type recorder struct {
	mu   sync.Mutex
	reqs []npu.Request
}

func (r *recorder) faults(req *npu.Request) sim.Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, *req)
	return sim.Fault{}
}

func (r *recorder) taken() []npu.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}`

// Issue 37: response_format (chat) and text.format (Responses), whole and
// streamed, reach the engine as the request's Format over a real server;
// before, each was a 400.
func TestStructuredOutputReachesTheEngine(t *testing.T) {
	rec := &recorder{}
	srv := startSim(t, nil, rec.faults)
	c := daemontest.NewClient(t, srv.URL)
	schemaFormat := &npu.Format{Type: npu.FormatJSONSchema, Name: "Person", Schema: json.RawMessage(personSchema), Strict: true}
	for _, tc := range []struct {
		name, path, body string
		want             *npu.Format
	}{
		{"chat json_schema", "/v1/chat/completions",
			`{"model":"sim","messages":[{"role":"user","content":"who?"}],"response_format":{"type":"json_schema","json_schema":{"name":"Person","strict":true,"schema":` + personSchema + `}}}`, schemaFormat},
		{"chat json_schema streamed", "/v1/chat/completions",
			`{"model":"sim","stream":true,"messages":[{"role":"user","content":"who?"}],"response_format":{"type":"json_schema","json_schema":{"name":"Person","strict":true,"schema":` + personSchema + `}}}`, schemaFormat},
		{"chat json_object", "/v1/chat/completions",
			`{"model":"sim","messages":[{"role":"user","content":"who?"}],"response_format":{"type":"json_object"}}`, &npu.Format{Type: npu.FormatJSONObject}},
		{"chat text", "/v1/chat/completions",
			`{"model":"sim","messages":[{"role":"user","content":"who?"}],"response_format":{"type":"text"}}`, nil},
		{"legacy completion json_object", "/v1/completions",
			`{"model":"sim","prompt":"who?","response_format":{"type":"json_object"}}`, &npu.Format{Type: npu.FormatJSONObject}},
		{"responses json_schema", "/v1/responses",
			`{"model":"sim","input":"who?","text":{"format":{"type":"json_schema","name":"Person","strict":true,"schema":` + personSchema + `}}}`, schemaFormat},
		{"responses json_schema streamed", "/v1/responses",
			`{"model":"sim","stream":true,"input":"who?","text":{"format":{"type":"json_schema","name":"Person","strict":true,"schema":` + personSchema + `}}}`, schemaFormat},
		{"responses json_object", "/v1/responses",
			`{"model":"sim","input":"who?","text":{"format":{"type":"json_object"}}}`, &npu.Format{Type: npu.FormatJSONObject}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := c.Do(t, http.MethodPost, tc.path, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			reqs := rec.taken()
			require.Len(t, reqs, 1)
			assert.Equal(t, tc.want, reqs[0].Format)
			if tc.path == "/v1/responses" && !strings.Contains(tc.name, "streamed") {
				var out struct {
					Text struct {
						Format map[string]any `json:"format"`
					} `json:"text"`
				}
				require.NoError(t, json.Unmarshal(raw, &out))
				assert.Equal(t, string(tc.want.Type), out.Text.Format["type"], "the response echoes its format")
			}
		})
	}
}

// chatChoice is one choice of a whole chat completion.
type chatChoice struct {
	Index   int `json:"index"`
	Message struct {
		Content      *string         `json:"content"`
		ToolCalls    json.RawMessage `json:"tool_calls"`
		FunctionCall *struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function_call"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

type choicesWhole struct {
	Choices []chatChoice `json:"choices"`
	Usage   struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// streamChoices reads a chat stream into each choice's text, finish
// reason and role chunks, by index, and the usage chunk's completion
// tokens.
type streamedChoice struct {
	text, finish string
	roles        int
	functionCall struct{ name, args string }
	names        int
}

func readChoices(t *testing.T, raw string) (map[int]*streamedChoice, []int, int, bool) {
	t.Helper()
	out := map[int]*streamedChoice{}
	var order []int
	usage, done := -1, false
	for _, line := range strings.Split(raw, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Role         string  `json:"role"`
					Content      *string `json:"content"`
					FunctionCall *struct {
						Name      *string `json:"name"`
						Arguments string  `json:"arguments"`
					} `json:"function_call"`
					ToolCalls json.RawMessage `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &chunk), data)
		if chunk.Usage != nil {
			usage = chunk.Usage.CompletionTokens
		}
		for _, ch := range chunk.Choices {
			c, ok := out[ch.Index]
			if !ok {
				c = &streamedChoice{}
				out[ch.Index] = c
				order = append(order, ch.Index)
			}
			require.Empty(t, c.finish, "a chunk of choice %d after its finish", ch.Index)
			require.Nil(t, ch.Delta.ToolCalls, "tool_calls in a legacy answer")
			if ch.Delta.Role != "" {
				c.roles++
			}
			if ch.Delta.Content != nil {
				c.text += *ch.Delta.Content
			}
			if fc := ch.Delta.FunctionCall; fc != nil {
				if fc.Name != nil {
					c.functionCall.name += *fc.Name
					c.names++
				}
				c.functionCall.args += fc.Arguments
			}
			if ch.FinishReason != nil {
				c.finish = *ch.FinishReason
			}
		}
	}
	return out, order, usage, done
}

// Issue 37 item 5: n choices, generated one after another, each its own
// generation with seed+i: whole, its choices indexed and the usage of them
// all; streamed, each choice's chunks in turn (its role chunk first, its
// finish chunk last), the same texts, then the usage and one [DONE]. An n
// beyond 8 is a 400.
func TestChoicesOneAfterAnother(t *testing.T) {
	rec := &recorder{}
	srv := startSim(t, nil, rec.faults)
	c := daemontest.NewClient(t, srv.URL)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	var want []string
	for i := range 3 {
		resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", fmt.Sprintf(`{"model":"sim","seed":%d,"max_tokens":6,%s}`, 5+i, msgs))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		var one choicesWhole
		require.NoError(t, json.Unmarshal(raw, &one))
		want = append(want, *one.Choices[0].Message.Content)
	}
	assert.NotEqual(t, want[0], want[1], "the seeds make different answers")
	rec.taken()

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","n":3,"seed":5,"max_tokens":6,`+msgs+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var whole choicesWhole
	require.NoError(t, json.Unmarshal(raw, &whole))
	require.Len(t, whole.Choices, 3)
	for i, ch := range whole.Choices {
		assert.Equal(t, i, ch.Index)
		assert.Equal(t, want[i], *ch.Message.Content)
		assert.Equal(t, "length", ch.FinishReason)
	}
	assert.Equal(t, 18, whole.Usage.CompletionTokens, "the usage of every choice")
	reqs := rec.taken()
	require.Len(t, reqs, 3, "one generation per choice")
	for i, r := range reqs {
		assert.EqualValues(t, 5+i, *r.Sampling.Seed)
	}

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"sim","n":3,"seed":5,"max_tokens":6,"stream":true,"stream_options":{"include_usage":true},`+msgs+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	got, order, usage, done := readChoices(t, string(raw))
	assert.Equal(t, []int{0, 1, 2}, order, "each choice in turn")
	for i := range 3 {
		require.Contains(t, got, i)
		assert.Equal(t, want[i], got[i].text)
		assert.Equal(t, 1, got[i].roles, "one role chunk per choice")
		assert.Equal(t, "length", got[i].finish)
	}
	assert.Equal(t, 18, usage)
	assert.True(t, done)
	assert.Equal(t, 1, strings.Count(string(raw), "data: [DONE]"))

	resp, raw = c.Do(t, http.MethodPost, "/v1/completions", `{"model":"sim","n":2,"seed":5,"max_tokens":4,"prompt":"hi"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var legacy struct {
		Object  string `json:"object"`
		Choices []struct {
			Index int    `json:"index"`
			Text  string `json:"text"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(raw, &legacy))
	assert.Equal(t, "text_completion", legacy.Object)
	require.Len(t, legacy.Choices, 2)
	assert.Equal(t, 1, legacy.Choices[1].Index)

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","n":9,`+msgs+`}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `"param":"n"`)

	rec.taken()
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","n":2,`+msgs+`}`, "Idempotency-Key", "k1")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), "a joinable stream is one generation")
	assert.Empty(t, rec.taken(), "nothing ran")
}

// Issue 37 item 5: a request with the legacy functions gets its call back
// as function_call (whole and streamed, finish_reason function_call, no
// tool_calls), and the conversation that sends the call and its function
// result back continues.
func TestLegacyFunctionCalls(t *testing.T) {
	rec := &recorder{}
	srv := startSim(t, nil, rec.faults)
	c := daemontest.NewClient(t, srv.URL)
	fns := `"functions":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],"function_call":{"name":"get_weather"}`
	body := `{"model":"sim","seed":7,"messages":[{"role":"user","content":"weather?"}],` + fns + `}`
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var whole choicesWhole
	require.NoError(t, json.Unmarshal(raw, &whole))
	require.Len(t, whole.Choices, 1)
	ch := whole.Choices[0]
	assert.Equal(t, "function_call", ch.FinishReason)
	assert.Nil(t, ch.Message.ToolCalls, "%s", raw)
	assert.Nil(t, ch.Message.Content)
	require.NotNil(t, ch.Message.FunctionCall, "%s", raw)
	assert.Equal(t, "get_weather", ch.Message.FunctionCall.Name)
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(ch.Message.FunctionCall.Arguments), &args))
	reqs := rec.taken()
	require.Len(t, reqs, 1)
	assert.Equal(t, npu.ToolChoice{Mode: npu.ToolChoiceFunction, Name: "get_weather"}, reqs[0].ToolChoice)
	assert.True(t, reqs[0].SingleToolCall)

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", strings.Replace(body, `{"model":"sim",`, `{"model":"sim","stream":true,`, 1))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	got, _, _, done := readChoices(t, string(raw))
	require.Contains(t, got, 0)
	assert.True(t, done)
	assert.Equal(t, "function_call", got[0].finish)
	assert.Equal(t, "get_weather", got[0].functionCall.name)
	assert.Equal(t, 1, got[0].names, "the name comes once: clients concatenate what repeats")
	assert.Equal(t, ch.Message.FunctionCall.Arguments, got[0].functionCall.args)

	rec.taken()
	callJSON, err := json.Marshal(ch.Message.FunctionCall)
	require.NoError(t, err)
	next := `{"model":"sim","seed":7,"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"function_call":` +
		string(callJSON) + `},{"role":"function","name":"get_weather","content":"sunny"}],"functions":[{"name":"get_weather"}]}`
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", next)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	reqs = rec.taken()
	require.Len(t, reqs, 1)
	require.Len(t, reqs[0].Messages, 3)
	assert.Equal(t, "get_weather", reqs[0].Messages[1].ToolCalls[0].Name)
	assert.Equal(t, npu.Message{Role: "tool", Content: "sunny", ToolCallID: reqs[0].Messages[1].ToolCalls[0].ID, ToolName: "get_weather"}, reqs[0].Messages[2])
}

// schemaRefusal is the router's refusal of a schema with a keyword npud
// cannot hold an answer to (npu/serve compiles the schema when it takes
// the request), as InvalidRequestError charged to npu.FormatParam.
var schemaRefusal = &npu.InvalidRequestError{Param: npu.FormatParam, Message: `unsupported keyword "patternProperties" at /properties/a`}

// Issue 37: the router's refusal of a schema is a 400 naming the keyword
// and the API's own parameter: response_format on chat, text.format on
// the Responses API.
func TestSchemaRefusalNamesTheParameter(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"local","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}}}`, "response_format"},
		{"/v1/responses", `{"model":"local","input":"hi","text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"}}}}`, "text.format"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			router := gin.New()
			openaiapi.New(&nputest.RefusingRouter{Err: schemaRefusal}, openaiapi.Config{}, slog.New(slog.DiscardHandler)).Register(router)
			srv := httptest.NewServer(router)
			t.Cleanup(srv.Close)
			resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, tc.path, tc.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
			var out struct {
				Error struct {
					Message string `json:"message"`
					Param   string `json:"param"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(raw, &out))
			assert.Equal(t, tc.param, out.Error.Param)
			assert.Contains(t, out.Error.Message, `"patternProperties"`)
		})
	}
}

// Issue 37 item 5: a later choice that fails ends the stream with the
// in-band error and [DONE], after the earlier choices' chunks and their
// finish; whole, the request fails with the error.
func TestChoiceFailureEndsTheStream(t *testing.T) {
	srv := startSim(t, nil, func(r *npu.Request) sim.Fault {
		if r.Sampling.Seed != nil && *r.Sampling.Seed == 6 {
			return sim.Fault{ErrorAtToken: 2}
		}
		return sim.Fault{}
	})
	c := daemontest.NewClient(t, srv.URL)
	body := `{"model":"sim","n":2,"seed":5,"max_tokens":6,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	text := string(raw)
	assert.Contains(t, text, `"index":0,"delta":{},"logprobs":null,"finish_reason":"length"`, "the first choice ended")
	assert.Contains(t, text, `"index":1,"delta":{"role":"assistant"`, "the second began")
	assert.Contains(t, text, `data: {"error":{`)
	assert.True(t, strings.HasSuffix(text, "data: [DONE]\n\n"))
	assert.NotContains(t, text, `"index":1,"delta":{},"logprobs":null,"finish_reason"`, "the failed choice has no finish")

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", strings.Replace(body, `"stream":true,`, "", 1))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"code":"engine_error"`)
}
