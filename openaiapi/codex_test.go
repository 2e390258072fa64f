package openaiapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// codex is Codex CLI's native binary as testdata/agents pins it (npm
// installs the optional package of this platform, @openai/codex-<os>-<cpu>,
// whose vendor folder holds it), or the test skips when it is not
// installed (outside CI: make test installs it).
func codex(t *testing.T) string {
	t.Helper()
	platform := map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}[runtime.GOOS] + "-" +
		map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	matches, _ := filepath.Glob(filepath.Join("..", "testdata", "agents", "node_modules", "@openai", "codex-"+platform, "vendor", "*", "bin", "codex"))
	if len(matches) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("Codex CLI is not installed (make test runs npm install in testdata/agents)")
		}
		t.Skip("Codex CLI is not installed: run npm install in testdata/agents")
	}
	abs, err := filepath.Abs(matches[0])
	require.NoError(t, err)
	return abs
}

// seenRequest is what the proxy in front of npud saw of one request.
type seenRequest struct {
	method, path, upgrade, beta string
}

// codexLine is what the test reads of `codex exec --json`.
type codexLine struct {
	Type string `json:"type"`
	Item struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Text    string `json:"text"`
	} `json:"item"`
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Codex CLI (codex exec, non-interactive), offline against npud on
// loopback, through a whole tool loop, over HTTP and over the Responses
// WebSocket mode: the simulated model calls one of the tools Codex sends
// (it picks one; Codex's prompt changes with the date and the folder),
// Codex runs it in a scratch folder and sends its output back, and the
// model's answer ends the turn. Codex's own tools (web_search, a
// namespace of sub-agent functions) go with every request: npud leaves
// them out instead of refusing Codex. A proxy in front of npud records
// the transport Codex used.
func TestCodexToolLoop(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's tool call drives the loop")
	if testing.Short() {
		t.Skip("runs Codex CLI twice: not with -short")
	}
	bin := codex(t)
	for _, tc := range []struct {
		name       string
		websockets bool
	}{{"http", false}, {"websocket", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var generations []*npu.Request
			srv := daemontest.StartSim(t, nil, func(r *npu.Request) sim.Fault {
				mu.Lock()
				defer mu.Unlock()
				generations = append(generations, &npu.Request{Messages: append([]npu.Message(nil), r.Messages...), Tools: r.Tools})
				return sim.Fault{}
			})
			target, err := url.Parse(srv.URL)
			require.NoError(t, err)
			var seen []seenRequest
			proxy := httputil.NewSingleHostReverseProxy(target)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Upgrade"), r.Header.Get("OpenAI-Beta")})
				mu.Unlock()
				proxy.ServeHTTP(w, r)
			}))
			defer front.Close()

			work, home := t.TempDir(), t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("hello\n"), 0o600))
			config := "model = \"sim\"\nmodel_provider = \"npud\"\n\n[model_providers.npud]\nname = \"npud\"\n" +
				"base_url = \"" + front.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"NPUD_API_KEY\"\n" +
				"request_max_retries = 0\nstream_max_retries = 0\n"
			if tc.websockets {
				config += "supports_websockets = true\n"
			}
			require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600))

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--json", "Use exec_command to read notes.txt")
			cmd.Dir = work
			cmd.WaitDelay = 5 * time.Second
			// Only what it needs: no key, proxy or setting of the test's own.
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home,
				"NPUD_API_KEY=unused-without-keys", "RUST_LOG=codex_api=info"}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "codex: %s\n%s", stderr.String(), out)

			var completed bool
			var answer string
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var l codexLine
				require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "%s", sc.Bytes())
				switch {
				case l.Type == "turn.failed" || l.Type == "error":
					assert.Failf(t, "codex failed", "%s", sc.Bytes())
				case l.Type == "turn.completed":
					completed = true
				case l.Type == "item.completed" && l.Item.Type == "agent_message":
					answer = l.Item.Text
				case l.Type == "item.completed" && l.Item.Type == "error":
					assert.NotContains(t, l.Item.Message, "Falling back from WebSockets", "%s", stderr.String())
				}
			}
			require.NoError(t, sc.Err())
			assert.True(t, completed, "%s", out)
			assert.NotEmpty(t, answer, "the model's answer ended the turn")

			mu.Lock()
			defer mu.Unlock()
			// The loop, as the model saw it: one generation called a tool;
			// a later one had that call and its output, with the same id,
			// and answered.
			callID := ""
			for _, g := range generations {
				for i, m := range g.Messages {
					if m.Role != "assistant" || len(m.ToolCalls) == 0 {
						continue
					}
					for _, next := range g.Messages[i+1:] {
						if next.Role == "tool" && next.ToolCallID == m.ToolCalls[0].ID {
							callID = next.ToolCallID
							t.Logf("the model called %s; Codex answered %q", m.ToolCalls[0].Name, reqinfoClip(next.Content))
						}
					}
				}
				names := make([]string, 0, len(g.Tools))
				for _, tool := range g.Tools {
					names = append(names, tool.Name)
				}
				assert.Contains(t, names, "exec_command", "Codex's function tools reach the model")
			}
			require.NotEmpty(t, callID, "no generation saw a call and its output: %d generations\n%s", len(generations), stderr.String())
			require.GreaterOrEqual(t, len(generations), 2)

			var posts, upgrades int
			for _, r := range seen {
				if r.path != "/v1/responses" {
					continue
				}
				switch {
				case r.method == http.MethodPost:
					posts++
				case r.method == http.MethodGet && strings.EqualFold(r.upgrade, "websocket"):
					upgrades++
					assert.Equal(t, "responses_websockets=2026-02-06", r.beta, "what Codex 0.169.0 sends")
				}
			}
			t.Logf("requests through the proxy: %+v", seen)
			if tc.websockets {
				assert.Zero(t, posts, "every response went over the WebSocket: %+v", seen)
				assert.Positive(t, upgrades)
				assert.Contains(t, stderr.String(), "connected to Responses WebSocket")
			} else {
				assert.Zero(t, upgrades, "%+v", seen)
				assert.GreaterOrEqual(t, posts, 2)
			}
		})
	}
}

func reqinfoClip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
