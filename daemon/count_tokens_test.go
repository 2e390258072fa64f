package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
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

// countTokensOf posts body to count_tokens: the count, and how the
// response says it was counted (its header, which the body agrees with).
func countTokensOf(t *testing.T, c *daemontest.Client, body string, header ...string) (int, string) {
	t.Helper()
	resp, raw := c.Do(t, http.MethodPost, anthropicapi.CountTokensPath, body, header...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var got struct {
		InputTokens int  `json:"input_tokens"`
		Estimate    bool `json:"npud_estimate"`
	}
	require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
	how := resp.Header.Get(anthropicapi.EstimateHeader)
	assert.Equal(t, how == "estimate", got.Estimate, "header %q, body %s", how, raw)
	return got.InputTokens, how
}

// messageInputTokens sends body (a count_tokens body) as a message of one
// token: the prompt tokens its usage reports, what was read from the
// cache included.
func messageInputTokens(t *testing.T, c *daemontest.Client, body string) int {
	t.Helper()
	body = strings.Replace(body, `{"model":`, `{"max_tokens":1,"model":`, 1)
	resp, raw := c.Do(t, http.MethodPost, anthropicapi.MessagesPath, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var m struct {
		Usage struct {
			InputTokens          int `json:"input_tokens"`
			CacheReadInputTokens int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m.Usage.InputTokens + m.Usage.CacheReadInputTokens
}

// countBodies are count_tokens bodies that render differently: a plain
// turn, a system prompt with tools, a tool call and its result, tools the
// tool choice hides, and an assistant's prefill.
var countBodies = map[string]string{
	"plain": `{"model":"%s","messages":[{"role":"user","content":"Say hello"}]}`,
	"system and tools": `{"model":"%s","system":"be brief","tools":[{"name":"get_weather","description":"The weather in a city",` +
		`"input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],"messages":[{"role":"user","content":"Weather in Zürich?"}]}`,
	"a tool call and its result": `{"model":"%s","tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[` +
		`{"role":"user","content":"Weather in Oslo?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny, 21 degrees"}]}]}`,
	"tools the choice hides": `{"model":"%s","tool_choice":{"type":"none"},"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],` +
		`"messages":[{"role":"user","content":"Say hello"}]}`,
	"an assistant's prefill": `{"model":"%s","messages":[{"role":"user","content":"Name a colour."},{"role":"assistant","content":"The colour is"}]}`,
}

// Issue 39 item 5: count_tokens is exact where npud counts the model's
// prompts, and says so: the count is the prompt a message of the same
// body reports in its usage, on the simulator in the daemon's process and
// in a worker process (the count crosses as a job).
func TestCountTokensEqualsTheMessagesUsage(t *testing.T) {
	for _, isolation := range []string{"none", "process"} {
		t.Run("isolation "+isolation, func(t *testing.T) {
			cfg := daemontest.Defaults(t)
			cfg.Isolation = isolation
			c := daemontest.NewClient(t, daemontest.Start(t, cfg, nil).URL)
			for name, body := range countBodies {
				t.Run(name, func(t *testing.T) {
					body := strings.Replace(body, "%s", sim.ModelID, 1)
					n, how := countTokensOf(t, c, body)
					assert.Equal(t, "exact", how)
					assert.Equal(t, messageInputTokens(t, c, body), n)
				})
			}
		})
	}
}

// A count loads a model that is not loaded, through the lifecycle, as a
// generation does: /api/ps lists it afterwards, with its keep-alive
// running.
func TestCountTokensLoadsTheModel(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.Isolation = "process" // the worker engine loads models
	c := daemontest.NewClient(t, daemontest.Start(t, cfg, nil).URL)
	ps := func() []map[string]any {
		_, raw := c.Do(t, http.MethodGet, "/api/ps", "")
		var out struct {
			Models []map[string]any `json:"models"`
		}
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
		return out.Models
	}
	require.Empty(t, ps(), "nothing is loaded before the count")
	_, how := countTokensOf(t, c, `{"model":"sim","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, "exact", how)
	loaded := ps()
	require.Len(t, loaded, 1, "the count loaded the model")
	assert.Equal(t, sim.ModelID, loaded[0]["name"])
	assert.NotEmpty(t, loaded[0]["expires_at"], "its keep-alive runs")
}

// A count takes no generation slot, so it answers while the model's one
// slot is busy; it is work of its tenant all the same: a tenant at its
// stream cap gets Anthropic's 429.
func TestCountTokensBesideAGeneration(t *testing.T) {
	const keyA, keyB = "count-test-key-a-0123456789", "count-test-key-b-0123456789"
	srv := daemontest.StartSim(t, func(cfg *daemon.Config) {
		cfg.APIKeys = []daemon.APIKey{{Name: "a", Key: keyA}, {Name: "b", Key: keyB}}
		cfg.MaxStreams = 1
		cfg.QueueTimeout = time.Second // a count that waited for the slot would fail, not hang
	}, func(*npu.Request) sim.Fault { return sim.Fault{StallAtToken: 2} }) // stalls until abandoned
	c := daemontest.NewClient(t, srv.URL)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+anthropicapi.MessagesPath,
		strings.NewReader(`{"model":"sim","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-api-key", keyA)
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	streaming := false
	for !streaming && lines.Scan() {
		streaming = lines.Text() == "event: content_block_delta"
	}
	require.True(t, streaming, "the generation runs, holding the engine's one slot: %v", lines.Err())

	body := `{"model":"sim","messages":[{"role":"user","content":"hello there"}]}`
	n, how := countTokensOf(t, c, body, "x-api-key", keyB)
	assert.Equal(t, "exact", how)
	assert.Equal(t, sim.CountTokens("user: hello there\n"), n)

	resp2, raw := c.Do(t, http.MethodPost, anthropicapi.CountTokensPath, body, "x-api-key", keyA)
	assert.Equal(t, http.StatusTooManyRequests, resp2.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"rate_limit_error"`)
}

// A model an upstream serves is not counted here: count_tokens keeps the
// estimate, and says so.
func TestCountTokensEstimatesUpstreamModels(t *testing.T) {
	backCfg := daemontest.Defaults(t)
	backCfg.Aliases = map[string]string{"big": "sim"}
	back := daemontest.Start(t, backCfg, sim.New(sim.Config{}))
	front := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Upstreams = []string{"back=" + back.URL + ";models=big;timeout=5s"}
	}, nil)
	n, how := countTokensOf(t, daemontest.NewClient(t, front.URL),
		`{"model":"big","system":"be brief","messages":[{"role":"user","content":"What is in this picture, in twelve words?"}]}`)
	assert.Equal(t, "estimate", how)
	assert.Equal(t, anthropicapi.EstimateTokens(&npu.Request{Messages: []npu.Message{
		{Role: "system", Content: "be brief"}, {Role: "user", Content: "What is in this picture, in twelve words?"}}}), n)
}
