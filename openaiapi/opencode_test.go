package openaiapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/wire/reqinfo"
)

// openCodeDir is the pinned install of OpenCode, with the other agents
// (`make test` runs npm install there), relative to this package.
var openCodeDir = filepath.Join("..", "testdata", "agents")

// openCode returns the pinned OpenCode binary and its version. It skips
// when the npm package is not installed, except in CI, where `make test`
// installs it.
func openCode(t *testing.T) string {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	raw, err := os.ReadFile(filepath.Join(openCodeDir, "package.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &pkg))
	pinned := pkg.Dependencies["opencode-ai"]
	require.NotEmpty(t, pinned)
	modules := filepath.Join(openCodeDir, "node_modules")
	platform := "opencode-" + map[string]string{"linux": "linux", "darwin": "darwin", "windows": "windows"}[runtime.GOOS] +
		"-" + map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	// The package's postinstall links the binary for this CPU into its
	// bin; without it (npm ignoring install scripts) the platform
	// package's own binary is there.
	for _, bin := range []string{
		filepath.Join(modules, "opencode-ai", "bin", "opencode.exe"),
		filepath.Join(modules, platform, "bin", "opencode"),
		filepath.Join(modules, platform+"-baseline", "bin", "opencode"),
	} {
		out, err := exec.CommandContext(t.Context(), bin, "--version").Output()
		if err == nil && strings.TrimSpace(string(out)) == pinned {
			abs, err := filepath.Abs(bin)
			require.NoError(t, err)
			return abs
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("OpenCode %s is not installed (make test runs npm install in testdata/agents)", pinned)
	}
	t.Skipf("OpenCode %s is not installed: run npm install in testdata/agents (the npm package opencode-ai and its platform binary)", pinned)
	return ""
}

// exchange is one request OpenCode sent and what npud answered.
type exchange struct {
	path     string
	request  []byte
	status   int
	header   http.Header
	response bytes.Buffer // written by the proxy's goroutine under recording.mu
}

// recording is a reverse proxy in front of npud that keeps every exchange,
// so the test sees exactly what OpenCode sent and got.
type recording struct {
	mu        sync.Mutex
	exchanges []*exchange
}

type exchangeKey struct{}

func (rec *recording) proxy(t *testing.T, target string) *httptest.Server {
	u, err := url.Parse(target)
	require.NoError(t, err)
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1, // SSE: every event as it comes
		ModifyResponse: func(resp *http.Response) error {
			ex := resp.Request.Context().Value(exchangeKey{}).(*exchange)
			rec.mu.Lock()
			ex.status, ex.header = resp.StatusCode, resp.Header.Clone()
			rec.mu.Unlock()
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(resp.Body, lockedWriter{&rec.mu, &ex.response}), resp.Body}
			return nil
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ex := &exchange{path: r.URL.Path, request: body}
		rec.mu.Lock()
		rec.exchanges = append(rec.exchanges, ex)
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// chatRequest is what the test reads of OpenCode's chat requests.
type chatRequest struct {
	MaxTokens     *int            `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions json.RawMessage `json:"stream_options"`
	Tools         []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

// streamedAnswer is what npud streamed back: its text, its calls
// (assembled from their pieces) and its finish reason.
type streamedAnswer struct {
	text   string
	calls  []struct{ id, name, args string }
	finish string
}

func readStream(t *testing.T, raw []byte) streamedAnswer {
	t.Helper()
	var a streamedAnswer
	for _, ev := range splitEvents(t, raw) {
		if ev.comment || ev.data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &chunk), "%s", ev.data)
		for _, ch := range chunk.Choices {
			a.text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				for len(a.calls) <= tc.Index {
					a.calls = append(a.calls, struct{ id, name, args string }{})
				}
				c := &a.calls[tc.Index]
				if tc.ID != "" {
					c.id, c.name = tc.ID, tc.Function.Name
				}
				c.args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				a.finish = *ch.FinishReason
			}
		}
	}
	return a
}

// TestOpenCodeToolLoop (issue 31): OpenCode, the coding agent, pinned
// from the npm registry, runs `opencode run` in a scratch project against
// npud's /v1 through its OpenAI-compatible provider: the model calls one of
// OpenCode's tools, OpenCode runs it in the project folder and sends the
// result back, the model answers, and OpenCode exits 0. OpenCode sends
// max_tokens 32000 on every request, more than the context leaves: npud
// clamps it (before, the agent turn was a 400 and OpenCode gave up). It
// runs offline: no models.dev, no updates, no sharing, HOME and the XDG
// folders in the test's own temporary folder, and an environment of its
// own (nothing of the test's passes to it).
func TestOpenCodeToolLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenCode, several seconds a turn: not with -short")
	}
	bin := openCode(t)
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) *daemontest.Server
		// permission is the one OpenCode permission the model has (the
		// others are denied, so their tools are not offered); tools are
		// the tools it gives; prepare fills the project; ran checks the
		// call's effect in it.
		permission string
		tools      []string
		prepare    func(t *testing.T, project string)
		ran        func(t *testing.T, project, tool string, args map[string]any, result string)
		// clampHeader: the engine counts the prompt when the request is
		// admitted, so the clamp is in the streamed response's headers
		// (the OpenVINO engine can only say it at the end).
		clampHeader bool
	}{
		{
			name: "sim",
			start: func(t *testing.T) *daemontest.Server {
				cfg := daemontest.Defaults(t)
				return daemontest.Start(t, cfg, sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL}))
			},
			// The simulated model calls one of the tools, filling its
			// schema with words: write makes a file in the project with
			// the content it chose; edit finds no such file there.
			permission: "edit",
			tools:      []string{"edit", "write"},
			prepare:    func(*testing.T, string) {},
			ran: func(t *testing.T, project, tool string, args map[string]any, result string) {
				path, _ := args["filePath"].(string)
				require.NotEmpty(t, path)
				if tool == "edit" {
					if args["oldString"] == args["newString"] { // one word in 32: OpenCode refuses before looking
						assert.Contains(t, result, "identical")
						return
					}
					assert.Contains(t, result, filepath.Join(project, path), "OpenCode looked for the file in the project folder")
					return
				}
				got, err := os.ReadFile(filepath.Join(project, path))
				require.NoError(t, err, "OpenCode wrote the file in the project folder")
				assert.Equal(t, args["content"], string(got))
				assert.Contains(t, result, "Wrote file successfully")
			},
			clampHeader: true,
		},
		{
			name: "openvino test library",
			start: func(t *testing.T) *daemontest.Server {
				return daemontest.StartOpenVINO(t, nil)
			},
			// The test library's Qwen-style model calls the first tool
			// with its first required argument "ovtest": read reads the
			// project's file of that name.
			permission: "read",
			tools:      []string{"read"},
			prepare: func(t *testing.T, project string) {
				require.NoError(t, os.WriteFile(filepath.Join(project, "ovtest"), []byte("the NPU answered\n"), 0o644))
			},
			ran: func(t *testing.T, _, _ string, args map[string]any, result string) {
				assert.Equal(t, "ovtest", args["filePath"])
				assert.Contains(t, result, "the NPU answered", "the tool's result is the project file's text")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.start(t)
			rec := &recording{}
			proxy := rec.proxy(t, srv.URL)

			root := t.TempDir()
			project, home := filepath.Join(root, "project"), filepath.Join(root, "home")
			require.NoError(t, os.MkdirAll(project, 0o755))
			require.NoError(t, os.MkdirAll(home, 0o755))
			tc.prepare(t, project)
			config := map[string]any{
				"$schema":     "https://opencode.ai/config.json",
				"model":       "npud/sim",
				"small_model": "npud/sim",
				"provider": map[string]any{"npud": map[string]any{
					"npm":     "@ai-sdk/openai-compatible",
					"name":    "npud",
					"options": map[string]any{"baseURL": proxy.URL + "/v1"},
					"models":  map[string]any{"sim": map[string]any{"name": "sim"}},
				}},
				// Few tools, so the model's call is known.
				"permission": map[string]string{"*": "deny", tc.permission: "allow"},
				"autoupdate": false,
				"share":      "disabled",
			}
			raw, err := json.Marshal(config)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(project, "opencode.json"), raw, 0o644))

			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--format", "json", "Use your tool once, then say what happened.")
			cmd.Dir = project
			cmd.Env = []string{
				"PATH=" + os.Getenv("PATH"), // bash and git, which OpenCode looks for
				"HOME=" + home,
				"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
				"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
				"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
				"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
				"TMPDIR=" + root,
				"OPENCODE_DISABLE_MODELS_FETCH=1", // models.dev
				"OPENCODE_DISABLE_AUTOUPDATE=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
				"OPENCODE_DISABLE_SHARE=1",
				"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
				"OPENCODE_DISABLE_CLAUDE_CODE=1", // no ~/.claude to read
			}
			cmd.WaitDelay = 10 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.NoError(t, runErr, "opencode run exits 0\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

			// What OpenCode sent and got, for the record.
			var agent []*exchange // the requests that offered tools
			var requests []chatRequest
			for _, ex := range rec.exchanges {
				if ex.path != "/v1/chat/completions" {
					t.Logf("OpenCode asked %s: %d", ex.path, ex.status)
					continue
				}
				var req chatRequest
				require.NoError(t, json.Unmarshal(ex.request, &req), "%s", ex.request)
				var names []string
				for _, tool := range req.Tools {
					names = append(names, tool.Function.Name)
				}
				maxTokens := "none"
				if req.MaxTokens != nil {
					maxTokens = strconv.Itoa(*req.MaxTokens)
				}
				answer := readStream(t, ex.response.Bytes())
				t.Logf("OpenCode sent max_tokens %s, stream %v, stream_options %s, %d messages, tools %v; got %d, %s %q, finish_reason %s, %d calls",
					maxTokens, req.Stream, req.StreamOptions, len(req.Messages), names, ex.status,
					reqinfo.MaxTokensClampedHeader, ex.header.Get(reqinfo.MaxTokensClampedHeader), answer.finish, len(answer.calls))
				require.Equal(t, http.StatusOK, ex.status, "every request is served:\n%s", ex.response.String())
				if len(req.Tools) > 0 {
					agent = append(agent, ex)
					requests = append(requests, req)
				}
			}
			require.GreaterOrEqual(t, len(agent), 2, "a turn with a call and one with its result")

			// The first agent turn: max_tokens beyond the context, clamped;
			// the model called the tool.
			first := requests[0]
			require.NotNil(t, first.MaxTokens)
			if tc.clampHeader {
				assert.NotEmpty(t, agent[0].header.Get(reqinfo.MaxTokensClampedHeader), "OpenCode's max_tokens %d was clamped, not refused", *first.MaxTokens)
			}
			var offered []string
			for _, tool := range first.Tools {
				offered = append(offered, tool.Function.Name)
			}
			assert.ElementsMatch(t, tc.tools, offered)
			call := readStream(t, agent[0].response.Bytes())
			assert.Equal(t, "tool_calls", call.finish)
			require.Len(t, call.calls, 1)
			tool := call.calls[0].name
			assert.Contains(t, tc.tools, tool)
			var args map[string]any
			require.NoError(t, json.Unmarshal([]byte(call.calls[0].args), &args), "%s", call.calls[0].args)

			// The next turn carries the call and OpenCode's result of it.
			next := requests[1]
			var result string
			foundCall := false
			for _, m := range next.Messages {
				for _, c := range m.ToolCalls {
					if m.Role == "assistant" && c.ID == call.calls[0].id && c.Function.Name == tool {
						foundCall = true
					}
				}
				if m.Role == "tool" && m.ToolCallID == call.calls[0].id {
					var s string
					if json.Unmarshal(m.Content, &s) != nil {
						s = string(m.Content) // an array of text parts
					}
					result = s
				}
			}
			assert.True(t, foundCall, "the call goes back as the assistant's")
			t.Logf("the model called %s(%s); OpenCode's result: %q", tool, call.calls[0].args, result)
			require.NotEmpty(t, result, "OpenCode sent the tool's result back")
			tc.ran(t, project, tool, args, result)

			// The model answered, and OpenCode showed that answer.
			last := readStream(t, agent[len(agent)-1].response.Bytes())
			assert.Equal(t, "stop", last.finish)
			require.NotEmpty(t, last.text)
			assert.Contains(t, stdout.String(), mustJSONString(t, last.text), "OpenCode's output carries the model's answer")
		})
	}
}

// mustJSONString is s as a JSON string's text (without the quotes), as it
// appears inside OpenCode's JSON events.
func mustJSONString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b[1 : len(b)-1])
}
