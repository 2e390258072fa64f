package anthropicapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/anthropicapi"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

type errorReply struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// Every bad input is a clear error in Anthropic's shape, before the engine.
func TestBadInput(t *testing.T) {
	srv := daemontest.StartSim(t, func(cfg *daemon.Config) { cfg.MaxBodyBytes = 64 << 10 }, nil)
	c := daemontest.NewClient(t, srv.URL)
	tool := `{"name":"f","input_schema":{"type":"object"}}`
	for _, tc := range []struct {
		name, body, want string
		status           int
		header           []string
	}{
		{"not JSON", `{`, "", 400, nil},
		{"no model", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model: Field required", 400, nil},
		{"no max_tokens", `{"model":"sim","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required", 400, nil},
		{"max_tokens 0", `{"model":"sim","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "at least 1", 400, nil},
		{"no messages", `{"model":"sim","max_tokens":5,"messages":[]}`, "at least one message", 400, nil},
		{"system message only", `{"model":"sim","max_tokens":5,"messages":[{"role":"system","content":"hi"}]}`, "nothing to answer", 400, nil},
		{"tool role", `{"model":"sim","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, "user, assistant or system", 400, nil},
		{"system message image", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"image"}]}]}`, "messages.1.content.0.type", 400, nil},
		{"content number", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":5}]}`, "messages.0.content", 400, nil},
		{"unknown block", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"hologram"}]}]}`, `"hologram"`, 400, nil},
		{"document block", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document"}]}]}`, "not supported", 400, nil},
		{"system image", `{"model":"sim","max_tokens":5,"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`, "system.0.type", 400, nil},
		{"orphan tool_result", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"1"}]}]}`, "answers no tool_use", 400, nil},
		{"tool_use in user", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]}`, "only assistant", 400, nil},
		{"tool_use input array", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":[]}]}]}`, "must be an object", 400, nil},
		{"server tool", `{"model":"sim","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"hi"}]}`, "web_search_20250305", 400, nil},
		{"tool without schema", `{"model":"sim","max_tokens":5,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"hi"}]}`, "input_schema: Field required", 400, nil},
		{"tool bad name", `{"model":"sim","max_tokens":5,"tools":[{"name":"a b","input_schema":{}}],"messages":[{"role":"user","content":"hi"}]}`, "tools.0.name", 400, nil},
		{"tool twice", `{"model":"sim","max_tokens":5,"tools":[` + tool + `,` + tool + `],"messages":[{"role":"user","content":"hi"}]}`, "declared twice", 400, nil},
		{"tool_choice unknown tool", `{"model":"sim","max_tokens":5,"tools":[` + tool + `],"tool_choice":{"type":"tool","name":"g"},"messages":[{"role":"user","content":"hi"}]}`, `"g" is not a tool`, 400, nil},
		{"tool_choice any without tools", `{"model":"sim","max_tokens":5,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`, "needs tools", 400, nil},
		{"tool_choice type", `{"model":"sim","max_tokens":5,"tool_choice":{"type":"required"},"messages":[{"role":"user","content":"hi"}]}`, "auto, any, tool or none", 400, nil},
		{"temperature", `{"model":"sim","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"hi"}]}`, "between 0 and 1", 400, nil},
		{"top_p", `{"model":"sim","max_tokens":5,"top_p":0,"messages":[{"role":"user","content":"hi"}]}`, "top_p", 400, nil},
		{"top_k", `{"model":"sim","max_tokens":5,"top_k":-1,"messages":[{"role":"user","content":"hi"}]}`, "top_k", 400, nil},
		{"empty stop", `{"model":"sim","max_tokens":5,"stop_sequences":[""],"messages":[{"role":"user","content":"hi"}]}`, "stop_sequences.0", 400, nil},
		{"thinking no budget", `{"model":"sim","max_tokens":5000,"thinking":{"type":"enabled"},"messages":[{"role":"user","content":"hi"}]}`, "budget_tokens: Field required", 400, nil},
		{"thinking small budget", `{"model":"sim","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":10},"messages":[{"role":"user","content":"hi"}]}`, "at least 1024", 400, nil},
		{"thinking budget over max", `{"model":"sim","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"hi"}]}`, "less than max_tokens", 400, nil},
		{"thinking type", `{"model":"sim","max_tokens":5,"thinking":{"type":"maybe"},"messages":[{"role":"user","content":"hi"}]}`, "enabled, disabled or adaptive", 400, nil},
		{"image media type", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"AA=="}}]}]}`, "media_type", 400, nil},
		{"image not base64", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%%%"}}]}]}`, "messages.0.content.0", 400, nil},
		{"image source type", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`, "base64 or url", 400, nil},
		{"mcp servers", `{"model":"sim","max_tokens":5,"mcp_servers":[{}],"messages":[{"role":"user","content":"hi"}]}`, "mcp_servers", 400, nil},
		{"bad version", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", 400, []string{"anthropic-version", "latest"}},
		{"unknown model", `{"model":"gpt-5-codex","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "--alias NAME=MODEL", 404, nil},
		{"too large", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", 70<<10) + `"}]}`, "", 413, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{anthropicapi.MessagesPath, anthropicapi.CountTokensPath} {
				if path == anthropicapi.CountTokensPath && strings.Contains(tc.name, "max_tokens") || tc.name == "bad version" && path == anthropicapi.CountTokensPath {
					continue // count_tokens takes no max_tokens, and reads no version
				}
				resp, body := c.Do(t, http.MethodPost, path, tc.body, tc.header...)
				require.Equal(t, tc.status, resp.StatusCode, "%s: %s", path, body)
				var e errorReply
				require.NoError(t, json.Unmarshal(body, &e), "%s", body)
				assert.Equal(t, "error", e.Type)
				assert.Equal(t, anthropicapi.TypeOf(tc.status), e.Error.Type)
				assert.Contains(t, e.Error.Message, tc.want)
			}
		})
	}
}

// The daemon's own refusals under /v1/messages are in Anthropic's shape.
func TestDaemonErrorsInAnthropicShape(t *testing.T) {
	srv := daemontest.StartSim(t, func(cfg *daemon.Config) {
		cfg.APIKeys = []daemon.APIKey{{Name: "agent", Key: "anthropic-test-key-0123456789"}}
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	resp, body := c.Do(t, http.MethodPost, anthropicapi.MessagesPath, `{}`)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	var e errorReply
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	assert.Equal(t, "authentication_error", e.Error.Type)
	assert.Contains(t, e.Error.Message, "x-api-key")
	resp, _ = c.Do(t, http.MethodPost, anthropicapi.CountTokensPath,
		`{"model":"sim","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer anthropic-test-key-0123456789")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "Authorization: Bearer is accepted too")
}

// Idle streams get ping events, and an engine error after the first byte
// is an error event in Anthropic's shape with nothing after it.
func TestStreamPingAndErrorEvent(t *testing.T) {
	srv := daemontest.StartSim(t, func(cfg *daemon.Config) { cfg.Heartbeat = time.Millisecond }, func(*npu.Request) sim.Fault {
		return sim.Fault{StallAtToken: 2, StallFor: 30 * time.Millisecond, ErrorAtToken: 3}
	})
	c := daemontest.NewClient(t, srv.URL)
	resp, body := c.Do(t, http.MethodPost, anthropicapi.MessagesPath,
		`{"model":"sim","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := string(body)
	assert.True(t, strings.HasPrefix(s, "event: message_start\n"), s)
	assert.Contains(t, s, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
	i := strings.Index(s, "event: error\n")
	require.Positive(t, i, s)
	assert.True(t, strings.HasSuffix(s, "\n\n"))
	tail := strings.SplitN(s[i:], "\n", 3)
	require.Len(t, tail, 3)
	var e errorReply
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(tail[1], "data: ")), &e))
	assert.Equal(t, "api_error", e.Error.Type)
	assert.Equal(t, "\n", tail[2], "nothing after the error event")
}

func pngBase64(t *testing.T, w, h int) string {
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))))
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// Issue 39 item 5: count_tokens on the simulator is exact, and says so:
// the count is the usage.input_tokens the same body reports as a message,
// an image's share included (the simulated model reads its size); a base64
// image goes to a vision model.
func TestCountTokensAndImages(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	img := pngBase64(t, 150, 100)
	text := `{"type":"text","text":"What is in this picture, in twelve words?"}`
	imageBlock := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + img + `"}}`
	var counts []int
	for _, content := range []string{text, text + "," + imageBlock} {
		body := `{"model":"sim","system":"be brief","messages":[{"role":"user","content":[` + content + `]}]}`
		n, how := countTokens(t, c, body)
		assert.Equal(t, "exact", how)
		assert.Equal(t, messageInputTokens(t, c, body), n, "count_tokens and the message's usage: %s", content)
		counts = append(counts, n)
	}
	assert.Greater(t, counts[1], counts[0], "the image's share")
}
