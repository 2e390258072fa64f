package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/creack/pty"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// fakeAgents puts codex, claude and opencode on a PATH of their own: each
// records its arguments and environment (NUL-separated) and exits 7.
func fakeAgents(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake agents are shell scripts")
	}
	dir := t.TempDir()
	for _, name := range []string{"codex", "claude", "opencode"} {
		script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\0' \"$@\" > '%[1]s/%[2]s.args'\nenv -0 > '%[1]s/%[2]s.env'\nexit 7\n", dir, name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
	}
	return dir
}

// recorded is what a fake agent was started with.
func recorded(t *testing.T, dir, name string) (args []string, env map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, name+".args"))
	require.NoError(t, err, "%s was not started", name)
	args = strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	raw, err = os.ReadFile(filepath.Join(dir, name+".env"))
	require.NoError(t, err)
	env = map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return args, env
}

func launch(t *testing.T, getenv func(string) string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.MainIO(t.Context(), append([]string{"launch"}, args...), getenv, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// codexSetting is the value of a `-c key=value` override Codex got.
func codexSetting(t *testing.T, args []string, key string) string {
	t.Helper()
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, key+"="); ok && i > 0 && args[i-1] == "-c" {
			return v
		}
	}
	t.Fatalf("codex got no -c %s=…: %q", key, args)
	return ""
}

func unquote(t *testing.T, toml string) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal([]byte(toml), &s), toml)
	return s
}

func callContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Issue 29 item 4: npud launch starts each agent (a fake one on PATH that
// records what it got) pointed at a real npud with an API key: the
// configuration reaches the agent, the key only through its environment,
// the user's real Anthropic and OpenAI keys to no agent (issue 38 item 7), the agent's
// own arguments after --, and its exit code back. Then what each agent
// got is used with the official clients against the daemon, as the agent
// would: it works as given.
func TestLaunchStartsEachAgentPointedAtNpud(t *testing.T) {
	const key = "k-launch-0123456789abcdef"
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "dev", Key: key}}
	}, nil)
	dir := fakeAgents(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-the-users-real-key")
	t.Setenv("OPENAI_API_KEY", "sk-the-users-real-openai-key")
	getenv := func(k string) string {
		return map[string]string{"PATH": dir, "NPUD_API_KEY": key, "NPUD_HOST": srv.URL}[k]
	}

	for _, agent := range []string{"codex", "claude", "opencode"} {
		code, stdout, stderr := launch(t, getenv, agent, "--", "--agent-flag", "its value")
		require.Equal(t, 7, code, "the agent's exit code\nstdout: %s\nstderr: %s", stdout, stderr)
		assert.Contains(t, stderr, `starting `+agent+` with model "sim"`)
		args, env := recorded(t, dir, agent)
		assert.Equal(t, []string{"--agent-flag", "its value"}, args[len(args)-2:], "%s: its own arguments last", agent)
		assert.NotContains(t, strings.Join(args, "\x00"), key, "%s: the key is never in argv", agent)
		assert.NotContains(t, stdout+stderr, key)
		assert.NotContains(t, env, "ANTHROPIC_API_KEY", "%s: a real Anthropic key never reaches an agent pointed at npud", agent)
		assert.NotContains(t, env, "OPENAI_API_KEY", "%s: a real OpenAI key never reaches an agent pointed at npud", agent)
	}

	// Codex: a Responses provider with the daemon's /v1 and the key in the
	// variable env_key names.
	args, env := recorded(t, dir, "codex")
	assert.Equal(t, `"npud"`, codexSetting(t, args, "model_provider"))
	assert.Equal(t, `"responses"`, codexSetting(t, args, "model_providers.npud.wire_api"))
	baseURL := unquote(t, codexSetting(t, args, "model_providers.npud.base_url"))
	assert.Equal(t, srv.URL+"/v1", baseURL)
	envKey := unquote(t, codexSetting(t, args, "model_providers.npud.env_key"))
	model := unquote(t, codexSetting(t, args, "model"))
	assert.Equal(t, "32768", codexSetting(t, args, "model_context_window"), "the sim model's context")
	oc := openai.NewClient(option.WithBaseURL(baseURL+"/"), option.WithAPIKey(env[envKey]), option.WithMaxRetries(0))
	resp, err := oc.Responses.New(callContext(t), responses.ResponseNewParams{
		Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")},
	})
	require.NoError(t, err, "Codex's request with Codex's configuration")
	assert.NotEmpty(t, resp.OutputText())

	// Claude Code: the Messages API at ANTHROPIC_BASE_URL with the token,
	// the npud model for the main and the small/fast model.
	_, env = recorded(t, dir, "claude")
	assert.Equal(t, srv.URL, env["ANTHROPIC_BASE_URL"])
	assert.Equal(t, key, env["ANTHROPIC_AUTH_TOKEN"])
	ac := anthropic.NewClient(anthropicoption.WithBaseURL(env["ANTHROPIC_BASE_URL"]),
		anthropicoption.WithAuthToken(env["ANTHROPIC_AUTH_TOKEN"]), anthropicoption.WithMaxRetries(0))
	for _, v := range []string{"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL"} {
		msg, err := ac.Messages.New(callContext(t), anthropic.MessageNewParams{
			Model: anthropic.Model(env[v]), MaxTokens: 16,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))},
		})
		require.NoError(t, err, "Claude Code's %s", v)
		assert.NotEmpty(t, msg.Content)
	}

	// OpenCode: its OpenAI-compatible provider, the key through {env:…}.
	_, env = recorded(t, dir, "opencode")
	var config struct {
		Model    string `json:"model"`
		Provider map[string]struct {
			Options struct {
				BaseURL string `json:"baseURL"`
				APIKey  string `json:"apiKey"`
			} `json:"options"`
		} `json:"provider"`
	}
	require.NoError(t, json.Unmarshal([]byte(env["OPENCODE_CONFIG_CONTENT"]), &config))
	provider, model, ok := strings.Cut(config.Model, "/")
	require.True(t, ok, config.Model)
	p := config.Provider[provider]
	keyVar, ok := strings.CutSuffix(strings.TrimPrefix(p.Options.APIKey, "{env:"), "}")
	require.True(t, ok, p.Options.APIKey)
	oc = openai.NewClient(option.WithBaseURL(p.Options.BaseURL+"/"), option.WithAPIKey(env[keyVar]), option.WithMaxRetries(0))
	chat, err := oc.Chat.Completions.New(callContext(t), openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	require.NoError(t, err, "OpenCode's request with OpenCode's configuration")
	assert.NotEmpty(t, chat.Choices)
}

// withoutTools is the simulated engine with a model that cannot call tools
// and a short context.
type withoutTools struct{ npu.Engine }

func (e withoutTools) Models() []npu.ModelInfo {
	ms := slices.Clone(e.Engine.Models())
	for i := range ms {
		ms[i].Details.ToolFormat = ""
	}
	return ms
}

// What launch says instead of starting an agent that could not work.
func TestLaunchChecksTheDaemonAndTheModel(t *testing.T) {
	dir := fakeAgents(t)
	srv := daemontest.StartSim(t, nil, nil)
	env := func(pairs ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(pairs); i += 2 {
				if pairs[i] == k {
					return pairs[i+1]
				}
			}
			return ""
		}
	}
	onPath := env("PATH", dir)

	code, _, stderr := launch(t, onPath, "codex", "--host", "127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no npud answers at http://127.0.0.1:1")

	code, _, stderr = launch(t, onPath, "claude", "--host", srv.URL, "--model", "no-such-model")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `model "no-such-model"`)

	code, _, stderr = launch(t, onPath, "aider", "--host", srv.URL)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown agent "aider"`)

	// --print shows the configuration and starts nothing.
	code, stdout, stderr := launch(t, onPath, "codex", "--host", srv.URL, "--print")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "[model_providers.npud]\n")
	assert.Contains(t, stdout, `base_url = "`+srv.URL+`/v1"`)
	assert.NoFileExists(t, filepath.Join(dir, "codex.args"))

	// An agent that is not installed: how to install it, and its
	// configuration.
	code, _, stderr = launch(t, env("PATH", t.TempDir()), "opencode", "--host", srv.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "opencode is not installed (npm install -g opencode-ai)")
	assert.Contains(t, stderr, `"baseURL": "`+srv.URL+`/v1"`)

	// A model that cannot call tools is refused; a short context is a
	// warning, and the agent starts.
	cfg := daemontest.Defaults(t)
	noTools := daemontest.Start(t, cfg, withoutTools{sim.New(sim.Config{})})
	code, _, stderr = launch(t, onPath, "claude", "--host", noTools.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `model "sim" cannot call tools`)
	assert.NoFileExists(t, filepath.Join(dir, "claude.args"))

	short := daemontest.Start(t, daemontest.Defaults(t), sim.New(sim.Config{ContextLength: 4096}))
	code, _, stderr = launch(t, onPath, "claude", "--host", short.URL)
	assert.Equal(t, 7, code, stderr)
	assert.Contains(t, stderr, `warning: model "sim" serves a context of 4096 tokens`)
	assert.FileExists(t, filepath.Join(dir, "claude.args"))
}

// Ctrl-C belongs to the agent: through a real pseudo-terminal the agent
// gets it and decides (this one exits 5), and npud, which the terminal
// signals too, waits for it and returns its exit code instead of dying
// under it.
func TestLaunchLeavesCtrlCToTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the npud binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("a pseudo-terminal")
	}
	srv := daemontest.StartSim(t, nil, nil)
	dir := t.TempDir()
	script := "#!/bin/sh\ntrap 'echo agent got Ctrl-C; exit 5' INT\necho agent ready\nwhile :; do sleep 0.05; done\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755))
	bin := daemontest.BuildNPUD(t)
	cmd := exec.CommandContext(t.Context(), bin, "launch", "claude", "--host", srv.URL)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	tty, err := pty.Start(cmd)
	require.NoError(t, err)
	defer tty.Close()
	out := make(chan string, 64)
	go func() {
		defer close(out)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				out <- string(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	var seen strings.Builder
	deadline := time.After(30 * time.Second)
	for !strings.Contains(seen.String(), "agent ready") {
		select {
		case s, ok := <-out:
			require.True(t, ok, "npud launch ended before the agent started:\n%s", seen.String())
			seen.WriteString(s)
		case <-deadline:
			t.Fatalf("the agent did not start:\n%s", seen.String())
		}
	}
	_, err = tty.Write([]byte{3}) // Ctrl-C: SIGINT to the terminal's foreground group
	require.NoError(t, err)
	err = cmd.Wait()
	for s := range out { // what was written before the terminal closed
		seen.WriteString(s)
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "npud exits with the agent's code")
	assert.Equal(t, 5, exit.ExitCode(), "npud was not killed by the Ctrl-C: %v\n%s", err, seen.String())
	assert.Contains(t, seen.String(), "agent got Ctrl-C")
}

// installedAgent is an agent's binary as testdata pins it (`make test`
// installs it), or the test is skipped (failed in CI, where it must be).
func installedAgent(t *testing.T, pattern, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("runs %s", what)
	}
	matches, _ := filepath.Glob(filepath.Join("..", "testdata", pattern))
	if len(matches) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (make test installs it)", what)
		}
		t.Skipf("%s is not installed (make test installs it)", what)
	}
	abs, err := filepath.Abs(matches[0])
	require.NoError(t, err)
	return abs
}

// The real Claude Code (pinned in testdata/agents), started by npud
// launch against a daemon with an API key, offline: with only what launch
// gave it (the token, the base URL, the npud model for every model it
// picks) it goes through a tool loop with the simulated model, which calls
// its Read tool; the user's real Anthropic key is not what it sends.
func TestLaunchRunsClaudeCode(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's tool call drives the loop")
	claude := installedAgent(t, "agents/node_modules/@anthropic-ai/claude-code-*/claude", "Claude Code")
	const key = "k-claude-0123456789abcdef"
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "dev", Key: key}}
	}, nil)
	// What reaches the daemon's address, header by header.
	var mu sync.Mutex
	var credentials []string
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		mu.Lock()
		credentials = append(credentials, r.In.Header.Get("Authorization"), r.In.Header.Get("X-Api-Key"))
		mu.Unlock()
		r.SetURL(target)
	}})
	defer proxy.Close()
	bin := t.TempDir()
	require.NoError(t, os.Symlink(claude, filepath.Join(bin, "claude")))
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("hello\n"), 0o600))
	t.Chdir(work)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-the-users-real-key") // would be refused by the daemon
	t.Setenv("ENABLE_TOOL_SEARCH", "false")                    // one tool declared: the model's call is Read
	t.Setenv("DISABLE_AUTOUPDATER", "1")
	getenv := func(k string) string {
		return map[string]string{"PATH": bin, "NPUD_API_KEY": key, "NPUD_HOST": proxy.URL}[k]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := cli.MainIO(ctx, []string{"launch", "claude", "--", "-p", "Read notes.txt",
		"--tools", "Read", "--allowedTools", "Read", "--output-format", "stream-json", "--verbose"},
		getenv, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut.String(), out.String())

	session := daemontest.ReadClaudeCode(t, out.Bytes())
	require.Len(t, session.Calls, 1, out.String())
	assert.Equal(t, "Read", session.Calls[0].Name)
	assert.Equal(t, session.CallIDs(), session.ResultIDs, "Claude Code ran the call and sent its result back")
	require.NotNil(t, session.Result, out.String())
	assert.False(t, session.Result.IsError, out.String())
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, credentials, "Bearer "+key)
	assert.NotContains(t, strings.Join(credentials, " "), "sk-ant-the-users-real-key", "the user's Anthropic key never reaches npud")
}

// The real OpenCode (pinned in testdata/agents), started by npud launch
// against a daemon with an API key, offline: the provider launch hands it
// in OPENCODE_CONFIG_CONTENT (merged over the project's opencode.json,
// which here only narrows its permissions) reaches npud with the key
// through {env:…}, and the simulated model's tool call goes round: the
// call, then OpenCode's result of it.
func TestLaunchRunsOpenCode(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's tool call drives the loop")
	opencode := installedAgent(t, "agents/node_modules/opencode-linux-x64*/bin/opencode", "OpenCode")
	const key = "k-opencode-0123456789abcdef"
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "dev", Key: key}}
	}, nil)
	type seen struct {
		auth string
		body map[string]any
	}
	var mu sync.Mutex
	var chats []seen
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		if r.In.URL.Path == "/v1/chat/completions" {
			raw, err := io.ReadAll(r.In.Body)
			if err == nil {
				var body map[string]any
				_ = json.Unmarshal(raw, &body)
				mu.Lock()
				chats = append(chats, seen{r.In.Header.Get("Authorization"), body})
				mu.Unlock()
			}
			r.Out.Body = io.NopCloser(bytes.NewReader(raw))
			r.Out.ContentLength = int64(len(raw))
		}
		r.SetURL(target)
	}})
	defer proxy.Close()

	bin, root := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(opencode, filepath.Join(bin, "opencode")))
	project, home := filepath.Join(root, "project"), filepath.Join(root, "home")
	require.NoError(t, os.MkdirAll(project, 0o755))
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("hello\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(project, "opencode.json"),
		[]byte(`{"permission": {"*": "deny", "read": "allow"}, "autoupdate": false, "share": "disabled"}`), 0o600))
	t.Chdir(project)
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME": filepath.Join(home, ".cache"), "XDG_STATE_HOME": filepath.Join(home, ".local", "state"), "TMPDIR": root,
		"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
		"OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_CLAUDE_CODE": "1",
	} {
		t.Setenv(k, v)
	}
	getenv := func(k string) string {
		return map[string]string{"PATH": bin, "NPUD_API_KEY": key, "NPUD_HOST": proxy.URL}[k]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := cli.MainIO(ctx, []string{"launch", "opencode", "--", "run", "--format", "json", "Use your tool once, then say what happened."},
		getenv, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut.String(), out.String())

	mu.Lock()
	defer mu.Unlock()
	var withTools []map[string]any
	for _, c := range chats {
		assert.Equal(t, "Bearer "+key, c.auth, "the key from {env:NPUD_API_KEY}")
		assert.Equal(t, "sim", c.body["model"], "the npud model launch named")
		if tools, _ := c.body["tools"].([]any); len(tools) > 0 {
			withTools = append(withTools, c.body)
		}
	}
	require.GreaterOrEqual(t, len(withTools), 2, "a turn with the call and one with its result:\n%s", out.String())
	messages, _ := withTools[1]["messages"].([]any)
	roles := make([]any, 0, len(messages))
	for _, m := range messages {
		roles = append(roles, m.(map[string]any)["role"])
	}
	assert.Contains(t, roles, "tool", "OpenCode sent its tool's result back")
}

// The real Codex CLI (pinned in testdata/agents), started by npud launch
// against a daemon with an API key, offline: the model provider launch
// passes with -c reaches /v1/responses with the key from env_key, over the
// Responses WebSocket mode (the daemon serves it, so launch turns it on),
// Codex declares only function tools (its web search and sub-agent tools
// are off), and the simulated model's tool call goes round: the call,
// then Codex's function_call_output, as the model saw them.
func TestLaunchRunsCodex(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's tool call drives the loop")
	codex := installedAgent(t, "agents/node_modules/@openai/codex-*/vendor/*/bin/codex", "Codex")
	const key = "k-codex-0123456789abcdef"
	var genMu sync.Mutex
	var generations []*npu.Request
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "dev", Key: key}}
	}, func(r *npu.Request) sim.Fault {
		genMu.Lock()
		defer genMu.Unlock()
		generations = append(generations, &npu.Request{Messages: append([]npu.Message(nil), r.Messages...), Tools: r.Tools})
		return sim.Fault{}
	})
	type seen struct {
		auth, method, path, upgrade string
		status                      int
		body                        map[string]any
	}
	var mu sync.Mutex
	var requests []*seen
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			s := &seen{auth: r.In.Header.Get("Authorization"), method: r.In.Method, path: r.In.URL.Path, upgrade: r.In.Header.Get("Upgrade")}
			if r.In.Body != nil {
				raw, err := io.ReadAll(r.In.Body)
				if err == nil {
					_ = json.Unmarshal(raw, &s.body)
				}
				r.Out.Body = io.NopCloser(bytes.NewReader(raw))
				r.Out.ContentLength = int64(len(raw))
			}
			mu.Lock()
			requests = append(requests, s)
			mu.Unlock()
			r.Out.Header.Set("X-Test-Request", strconv.Itoa(len(requests)-1))
			r.SetURL(target)
		},
		ModifyResponse: func(resp *http.Response) error {
			i, err := strconv.Atoi(resp.Request.Header.Get("X-Test-Request"))
			if err == nil {
				mu.Lock()
				requests[i].status = resp.StatusCode
				mu.Unlock()
			}
			return nil
		},
	})
	defer proxy.Close()

	bin, home, work := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(codex, filepath.Join(bin, "codex")))
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("hello\n"), 0o600))
	t.Chdir(work)
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", home)
	t.Setenv("OPENAI_API_KEY", "sk-the-users-real-openai-key")
	getenv := func(k string) string {
		return map[string]string{"PATH": bin, "NPUD_API_KEY": key, "NPUD_HOST": proxy.URL}[k]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := cli.MainIO(ctx, []string{"launch", "codex", "--", "exec", "--skip-git-repo-check", "Read notes.txt"},
		getenv, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut.String(), out.String())

	mu.Lock()
	defer mu.Unlock()
	var posts, sockets int
	for _, r := range requests {
		assert.NotContains(t, r.auth, "sk-the-users-real-openai-key", "the user's OpenAI key never reaches npud")
		if r.path != "/v1/responses" {
			continue // Codex's model list
		}
		assert.Equal(t, "Bearer "+key, r.auth, "the key from env_key")
		switch {
		case r.method == http.MethodGet && strings.EqualFold(r.upgrade, "websocket"):
			assert.Equal(t, http.StatusSwitchingProtocols, r.status)
			sockets++ // launch's probe, then Codex's connection
		case r.method == http.MethodPost:
			posts++
		}
	}
	assert.GreaterOrEqual(t, sockets, 2, "launch's probe and Codex's own connection")
	assert.Zero(t, posts, "every turn went over the WebSocket")

	genMu.Lock()
	defer genMu.Unlock()
	require.GreaterOrEqual(t, len(generations), 2, "a turn with the call and one with its result:\n%s", errOut.String())
	looped := false
	for _, g := range generations {
		for _, tool := range g.Tools {
			assert.NotEqual(t, "web_search", tool.Name)
		}
		for i, m := range g.Messages {
			if m.Role != "assistant" || len(m.ToolCalls) == 0 {
				continue
			}
			for _, next := range g.Messages[i+1:] {
				looped = looped || (next.Role == "tool" && next.ToolCallID == m.ToolCalls[0].ID)
			}
		}
	}
	assert.True(t, looped, "Codex sent its tool's result back for the model's call")
}
