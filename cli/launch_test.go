package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 29 item 4: what each agent is given to reach this npud, with and
// without an API key. The key is only ever in the agent's environment.
func TestAgentConfig(t *testing.T) {
	const key = "k-secret-0123456789abcdef"
	keyed := launchTarget{Base: "http://127.0.0.1:11434", Model: "qwen3-8b", Context: 40960, Key: key, WebSocket: true}
	open := launchTarget{Base: "http://10.0.0.5:8080", Model: "sim", Context: 0}
	tests := []struct {
		name   string
		agent  string
		target launchTarget
		check  func(t *testing.T, s agentSetup)
	}{
		{"codex with a key", "codex", keyed, func(t *testing.T, s agentSetup) {
			assert.Equal(t, "codex", s.Program)
			assert.Equal(t, []string{
				"-c", `model="qwen3-8b"`,
				"-c", `model_provider="npud"`,
				"-c", `model_providers.npud.name="npud"`,
				"-c", `model_providers.npud.base_url="http://127.0.0.1:11434/v1"`,
				"-c", `model_providers.npud.wire_api="responses"`,
				"-c", `model_providers.npud.supports_websockets=true`,
				"-c", `web_search="disabled"`,
				"-c", `features.multi_agent=false`,
				"-c", `features.goals=false`,
				"-c", `model_context_window=40960`,
				"-c", `model_providers.npud.env_key="NPUD_API_KEY"`,
			}, s.Args)
			assert.Equal(t, map[string]string{"NPUD_API_KEY": key}, s.Env)
			// The printed file is Codex's config.toml, the same settings.
			var file struct {
				Model         string `toml:"model"`
				ModelProvider string `toml:"model_provider"`
				ContextWindow int    `toml:"model_context_window"`
				WebSearch     string `toml:"web_search"`
				Features      struct {
					MultiAgent *bool `toml:"multi_agent"`
					Goals      *bool `toml:"goals"`
				} `toml:"features"`
				ModelProviders map[string]struct {
					Name              string `toml:"name"`
					BaseURL           string `toml:"base_url"`
					WireAPI           string `toml:"wire_api"`
					SupportsWebsocket bool   `toml:"supports_websockets"`
					EnvKey            string `toml:"env_key"`
				} `toml:"model_providers"`
			}
			require.NoError(t, toml.Unmarshal([]byte(s.Print), &file), s.Print)
			assert.Equal(t, "qwen3-8b", file.Model)
			assert.Equal(t, "npud", file.ModelProvider)
			assert.Equal(t, 40960, file.ContextWindow)
			assert.Equal(t, "disabled", file.WebSearch, "no web_search tool: npud cannot run it")
			require.NotNil(t, file.Features.MultiAgent)
			assert.False(t, *file.Features.MultiAgent, "no sub-agent namespace tool")
			require.NotNil(t, file.Features.Goals)
			assert.False(t, *file.Features.Goals, "no goal items without a call_id")
			p := file.ModelProviders["npud"]
			assert.Equal(t, "http://127.0.0.1:11434/v1", p.BaseURL)
			assert.Equal(t, "responses", p.WireAPI)
			assert.True(t, p.SupportsWebsocket)
			assert.Equal(t, "NPUD_API_KEY", p.EnvKey)
		}},
		{"codex without a key or WebSocket mode", "codex", open, func(t *testing.T, s agentSetup) {
			assert.Contains(t, s.Args, `model_providers.npud.supports_websockets=false`)
			assert.NotContains(t, strings.Join(s.Args, " "), "env_key", "no key to send")
			assert.NotContains(t, strings.Join(s.Args, " "), "model_context_window", "unknown: Codex keeps its own")
			assert.Empty(t, s.Env)
		}},
		{"claude with a key", "claude", keyed, func(t *testing.T, s agentSetup) {
			assert.Equal(t, "claude", s.Program)
			assert.Empty(t, s.Args)
			assert.Equal(t, map[string]string{
				"ANTHROPIC_BASE_URL":                       "http://127.0.0.1:11434",
				"ANTHROPIC_AUTH_TOKEN":                     key,
				"ANTHROPIC_MODEL":                          "qwen3-8b",
				"ANTHROPIC_SMALL_FAST_MODEL":               "qwen3-8b",
				"ANTHROPIC_DEFAULT_OPUS_MODEL":             "qwen3-8b",
				"ANTHROPIC_DEFAULT_SONNET_MODEL":           "qwen3-8b",
				"ANTHROPIC_DEFAULT_HAIKU_MODEL":            "qwen3-8b",
				"CLAUDE_CODE_SUBAGENT_MODEL":               "qwen3-8b",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"CLAUDE_CODE_MAX_CONTEXT_TOKENS":           "40960", // the window of a model Claude Code does not know
			}, s.Env)
			assert.Equal(t, []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}, s.Unset, "a real Anthropic key never goes to the daemon")
			assert.Contains(t, s.Print, `export ANTHROPIC_AUTH_TOKEN="$NPUD_API_KEY"`)
			assert.Contains(t, s.Print, "unset ANTHROPIC_API_KEY\n")
		}},
		{"claude without a key", "claude", open, func(t *testing.T, s agentSetup) {
			assert.Equal(t, "npud", s.Env["ANTHROPIC_AUTH_TOKEN"], "a token that skips Claude Code's login; the daemon checks none")
			assert.Equal(t, "http://10.0.0.5:8080", s.Env["ANTHROPIC_BASE_URL"])
			assert.Contains(t, s.Print, "export ANTHROPIC_AUTH_TOKEN=npud\n")
		}},
		{"opencode with a key", "opencode", keyed, func(t *testing.T, s agentSetup) {
			assert.Equal(t, "opencode", s.Program)
			assert.Empty(t, s.Args)
			assert.Equal(t, key, s.Env["NPUD_API_KEY"])
			var config struct {
				Model      string `json:"model"`
				SmallModel string `json:"small_model"`
				Provider   map[string]struct {
					NPM     string `json:"npm"`
					Options struct {
						BaseURL string `json:"baseURL"`
						APIKey  string `json:"apiKey"`
					} `json:"options"`
					Models map[string]struct {
						ToolCall bool `json:"tool_call"`
						Limit    struct{ Context, Output int }
					} `json:"models"`
				} `json:"provider"`
			}
			require.NoError(t, json.Unmarshal([]byte(s.Env["OPENCODE_CONFIG_CONTENT"]), &config))
			assert.Equal(t, "npud/qwen3-8b", config.Model)
			assert.Equal(t, "npud/qwen3-8b", config.SmallModel)
			p := config.Provider["npud"]
			assert.Equal(t, "@ai-sdk/openai-compatible", p.NPM)
			assert.Equal(t, "http://127.0.0.1:11434/v1", p.Options.BaseURL)
			assert.Equal(t, "{env:NPUD_API_KEY}", p.Options.APIKey, "a reference, not the key")
			assert.True(t, p.Models["qwen3-8b"].ToolCall)
			assert.Equal(t, 40960, p.Models["qwen3-8b"].Limit.Context)
			assert.Equal(t, 10240, p.Models["qwen3-8b"].Limit.Output)
		}},
		{"opencode without a key", "opencode", open, func(t *testing.T, s agentSetup) {
			assert.NotContains(t, s.Env["OPENCODE_CONFIG_CONTENT"], "apiKey")
			assert.NotContains(t, s.Env["OPENCODE_CONFIG_CONTENT"], "limit", "unknown context: OpenCode's default")
			assert.NotContains(t, s.Env, "NPUD_API_KEY")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := agentConfig(tc.agent, tc.target)
			require.NoError(t, err)
			tc.check(t, s)
			assert.NotContains(t, strings.Join(s.Args, " "), key, "the key is never in argv")
			assert.NotContains(t, s.Print, key, "nor in what --print shows")
			assert.NotEmpty(t, s.Install)
			// Issue 38 item 7: every agent loses the user's hosted keys.
			assert.Subset(t, s.Unset, []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"})
		})
	}
	_, err := agentConfig("aider", keyed)
	assert.ErrorContains(t, err, `unknown agent "aider"`)
}

// A model name is one shell word and one TOML string, whatever it holds.
func TestLaunchQuoting(t *testing.T) {
	for in, want := range map[string]string{
		"qwen3-8b":    "qwen3-8b",
		"a b":         "'a b'",
		"it's":        `'it'\''s'`,
		"$(rm -rf ~)": "'$(rm -rf ~)'",
		"":            "''",
	} {
		assert.Equal(t, want, shellQuote(in), in)
	}
	var v struct{ S string }
	for _, s := range []string{`quote"d`, `back\slash`, "new\nline", "ünïcode"} {
		require.NoError(t, toml.Unmarshal([]byte("S = "+tomlString(s)), &v))
		assert.Equal(t, s, v.S)
	}
}

func TestAgentEnv(t *testing.T) {
	setup := agentSetup{Env: map[string]string{"B": "new", "C": "3"}, Unset: []string{"GONE"}}
	got := agentEnv([]string{"A=1", "B=old", "GONE=secret", "PATH=/bin"}, setup)
	assert.Equal(t, []string{"A=1", "PATH=/bin", "B=new", "C=3"}, got)
}

// Codex is told the daemon has the Responses API's WebSocket mode only when
// the handshake on /v1/responses succeeds (with the key), not when the
// route answers plain HTTP.
func TestLaunchProbesTheResponsesWebSocket(t *testing.T) {
	const key = "k-ws-0123456789abcdef"
	upgrades := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		_, _, _ = conn.Read(r.Context()) // until launch closes it
	}))
	defer upgrades.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"method not allowed"}}`, http.StatusMethodNotAllowed)
	}))
	defer plain.Close()

	assert.True(t, (&apiClient{base: upgrades.URL, key: key, http: &http.Client{}}).servesResponsesWebSocket(t.Context()))
	assert.False(t, (&apiClient{base: upgrades.URL, key: "wrong", http: &http.Client{}}).servesResponsesWebSocket(t.Context()))
	assert.False(t, (&apiClient{base: plain.URL, http: &http.Client{}}).servesResponsesWebSocket(t.Context()))
}
