package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// `npud launch AGENT` points a coding agent at this npud and starts it, as
// `ollama launch` does: it checks the daemon and the model first, hands the
// agent its configuration through its own command-line overrides and
// environment (no file of the user's is touched), and with --print only
// shows that configuration, for a permanent setup.

const launchUsage = `usage: npud launch codex|claude|opencode [--host HOST] [--model MODEL] [--print] [-- AGENT ARGS]

Checks that the daemon answers and that the model can call tools with a
context long enough for a coding agent, then starts the agent pointed at
this npud: Codex through a model provider on the Responses API, Claude Code
through the Anthropic Messages API, OpenCode through an OpenAI-compatible
provider. Every model name the agent asks for is the npud model. --print
shows the configuration (Codex's config.toml, Claude Code's environment,
OpenCode's opencode.json) instead of starting the agent. The daemon's
address: --host, else NPUD_HOST, else OLLAMA_HOST, else 127.0.0.1:11434;
its API key: NPUD_API_KEY, which reaches the agent only through its
environment, never its arguments.
`

// launchMinContext is the context below which launch warns: a coding
// agent's own system prompt and tool schemas take thousands of tokens
// before the first file it reads, so a short context ends sessions early.
// npud's rule of thumb, not a figure any agent publishes.
const launchMinContext = 32768

// apiKeyEnv is the variable that carries the daemon's API key to an agent
// whose configuration names a variable (Codex's env_key, OpenCode's
// {env:…}); it is also where the npud CLI reads it.
const apiKeyEnv = "NPUD_API_KEY"

// launchTarget is what an agent's configuration points at.
type launchTarget struct {
	Base      string // the daemon's URL, no trailing slash
	Model     string // the npud model every agent request names
	Context   int    // tokens the model serves (0: unknown)
	Key       string // the daemon's API key ("" when it needs none)
	WebSocket bool   // the daemon serves the Responses API's WebSocket mode
}

// agentSetup is how one agent is started: its program, arguments and
// environment. Secrets are only ever in Env.
type agentSetup struct {
	Program string
	Args    []string
	Env     map[string]string // added to the agent's environment
	Unset   []string          // removed from the inherited environment
	Print   string            // what --print shows (no secret)
	Install string            // how to install the agent when it is missing
}

// agentConfig is the configuration agent gets for t.
func agentConfig(agent string, t launchTarget) (agentSetup, error) {
	switch agent {
	case "codex":
		return codexConfig(t), nil
	case "claude":
		return claudeConfig(t), nil
	case "opencode":
		return openCodeConfig(t)
	}
	return agentSetup{}, fmt.Errorf("unknown agent %q (codex, claude or opencode)", agent)
}

// hostedKeys are the user's own keys for the hosted APIs, removed from
// every agent's environment: an agent pointed at npud needs only npud's
// key, and a hosted key passed on could go to the daemon (Claude Code
// prefers ANTHROPIC_API_KEY to its token; OpenCode's other providers read
// them) or to any tool the agent runs.
func hostedKeys() []string { return []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} }

// tomlString is s as a TOML basic string: JSON's string escapes are all
// TOML's too.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// codexConfig is a Codex model provider on the Responses API (the only
// wire API Codex keeps), passed as `-c key=value` overrides (TOML values),
// with WebSocket mode when the daemon serves it; the key goes through
// env_key, so Codex sends it as a bearer token.
func codexConfig(t launchTarget) agentSetup {
	settings := [][2]string{
		{"model", tomlString(t.Model)},
		{"model_provider", `"npud"`},
		{"model_providers.npud.name", `"npud"`},
		{"model_providers.npud.base_url", tomlString(t.Base + "/v1")},
		{"model_providers.npud.wire_api", `"responses"`},
		{"model_providers.npud.supports_websockets", strconv.FormatBool(t.WebSocket)},
		// What Codex 0.169 sends that a local model cannot use, off (npud
		// leaves the first two out and gives the third to the model as
		// text): a web_search tool, its sub-agent tools as a "namespace"
		// tool, and its goals, whose progress it reports as a
		// function_call_output with no call_id.
		{"web_search", `"disabled"`},
		{"features.multi_agent", "false"},
		{"features.goals", "false"},
	}
	if t.Context > 0 {
		settings = append(settings, [2]string{"model_context_window", strconv.Itoa(t.Context)})
	}
	s := agentSetup{Program: "codex", Env: map[string]string{}, Unset: hostedKeys(), Install: "npm install -g @openai/codex"}
	if t.Key != "" {
		settings = append(settings, [2]string{"model_providers.npud.env_key", tomlString(apiKeyEnv)})
		s.Env[apiKeyEnv] = t.Key
	}
	var top, features, provider strings.Builder
	for _, kv := range settings {
		s.Args = append(s.Args, "-c", kv[0]+"="+kv[1])
		switch name, table := strings.CutPrefix(kv[0], "model_providers.npud."); {
		case table:
			fmt.Fprintf(&provider, "%s = %s\n", name, kv[1])
		case strings.HasPrefix(kv[0], "features."):
			fmt.Fprintf(&features, "%s = %s\n", strings.TrimPrefix(kv[0], "features."), kv[1])
		default:
			fmt.Fprintf(&top, "%s = %s\n", kv[0], kv[1])
		}
	}
	s.Print = "# ~/.codex/config.toml (npud launch codex passes the same with -c,\n" +
		"# and removes " + strings.Join(s.Unset, " and ") + " from Codex's environment)\n" + top.String() +
		"\n[features]\n" + features.String() +
		"\n[model_providers.npud]\n" + provider.String()
	if t.Key != "" {
		s.Print += "\n# Codex reads the key from " + apiKeyEnv + ": export " + apiKeyEnv + "=<the daemon's key>\n"
	}
	return s
}

// claudeConfig is Claude Code's environment: npud's Anthropic Messages
// API, a bearer token (npud takes one without checking it when it has no
// keys; Claude Code wants one to skip its login), and the npud model for
// every model Claude Code would pick on its own (the main model, the
// small/fast one, subagents and each tier's default). The hosted APIs'
// keys in the environment are removed, so a real Anthropic key never goes
// to the daemon.
func claudeConfig(t launchTarget) agentSetup {
	token := t.Key
	if token == "" {
		token = "npud"
	}
	s := agentSetup{
		Program: "claude",
		Env: map[string]string{
			"ANTHROPIC_BASE_URL":   t.Base,
			"ANTHROPIC_AUTH_TOKEN": token,
			// Claude Code's telemetry, update checks and error reports go
			// to Anthropic, not to the box it was pointed at.
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		},
		Unset:   hostedKeys(),
		Install: "npm install -g @anthropic-ai/claude-code",
	}
	for _, v := range claudeModelVars {
		s.Env[v] = t.Model
	}
	if t.Context > 0 {
		// How Claude Code 2.1 reads the context window of a model it does
		// not know (else it assumes its default, and warns): the window its
		// auto-compaction works within.
		s.Env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = strconv.Itoa(t.Context)
	}
	var b strings.Builder
	b.WriteString("# Claude Code's environment (npud launch claude sets it for the agent only)\n")
	for _, k := range s.Unset {
		fmt.Fprintf(&b, "unset %s\n", k)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v := shellQuote(s.Env[k])
		if k == "ANTHROPIC_AUTH_TOKEN" && t.Key != "" {
			v = `"$` + apiKeyEnv + `"`
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, v)
	}
	b.WriteString("claude\n")
	s.Print = b.String()
	return s
}

// claudeModelVars are the variables through which Claude Code picks its
// models.
var claudeModelVars = []string{
	"ANTHROPIC_MODEL",
	"ANTHROPIC_SMALL_FAST_MODEL",
	"ANTHROPIC_DEFAULT_OPUS_MODEL",
	"ANTHROPIC_DEFAULT_SONNET_MODEL",
	"ANTHROPIC_DEFAULT_HAIKU_MODEL",
	"CLAUDE_CODE_SUBAGENT_MODEL",
}

// openCodeConfig is an opencode.json with npud as an OpenAI-compatible
// provider, given to OpenCode inline (OPENCODE_CONFIG_CONTENT, merged over
// the user's own configuration); the key is referenced as {env:…}, so the
// JSON itself holds no secret.
func openCodeConfig(t launchTarget) (agentSetup, error) {
	model := map[string]any{"name": t.Model, "tool_call": true}
	if t.Context > 0 {
		model["limit"] = map[string]int{"context": t.Context, "output": min(t.Context/4, 32768)}
	}
	options := map[string]any{"baseURL": t.Base + "/v1"}
	s := agentSetup{Program: "opencode", Env: map[string]string{}, Unset: hostedKeys(), Install: "npm install -g opencode-ai"}
	if t.Key != "" {
		options["apiKey"] = "{env:" + apiKeyEnv + "}"
		s.Env[apiKeyEnv] = t.Key
	}
	config := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"model":       "npud/" + t.Model,
		"small_model": "npud/" + t.Model,
		"provider": map[string]any{"npud": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "npud",
			"options": options,
			"models":  map[string]any{t.Model: model},
		}},
	}
	raw, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return agentSetup{}, err
	}
	s.Env["OPENCODE_CONFIG_CONTENT"] = string(raw)
	s.Print = "// opencode.json (npud launch opencode passes it in OPENCODE_CONFIG_CONTENT,\n" +
		"// and removes " + strings.Join(s.Unset, " and ") + " from OpenCode's environment)\n" + string(raw) + "\n"
	return s, nil
}

// shellQuote is s as one POSIX shell word.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// launchCommand runs `npud launch`.
func launchCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) == 1 && isHelp(args[0]) {
			fmt.Fprint(stdout, launchUsage)
			return 0
		}
		fmt.Fprint(stderr, launchUsage)
		return 2
	}
	agent := args[0]
	if _, err := agentConfig(agent, launchTarget{}); err != nil {
		fmt.Fprintf(stderr, "npud launch: %v\n\n%s", err, launchUsage)
		return 2
	}
	var model string
	var printOnly bool
	c, rest, code := clientFlags("launch "+agent, "[--model MODEL] [--print] [-- AGENT ARGS]", args[1:], getenv, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&model, "model", "", "the npud model the agent uses (default: the daemon's only model)")
		fs.BoolVar(&printOnly, "print", false, "print the agent's configuration instead of starting it")
	})
	if code >= 0 {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "npud launch %s: %s\n", agent, terminalSafe(err.Error(), true))
		return 1
	}
	target, warnings, err := c.launchTarget(ctx, model)
	if err != nil {
		return fail(err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "npud launch %s: warning: %s\n", agent, terminalSafe(w, true))
	}
	setup, err := agentConfig(agent, target)
	if err != nil {
		return fail(err)
	}
	if printOnly {
		fmt.Fprint(stdout, terminalSafe(setup.Print, true))
		return 0
	}
	program, err := findProgram(setup.Program, getenv("PATH"))
	if err != nil {
		fmt.Fprintf(stderr, "npud launch %s: %s is not installed (%s), or not on PATH; its configuration for this npud:\n\n%s",
			agent, setup.Program, setup.Install, terminalSafe(setup.Print, true))
		return 1
	}
	fmt.Fprintf(stderr, "npud launch: starting %s with model %q on %s\n", setup.Program, terminalSafe(target.Model, false), target.Base)
	return runAgent(ctx, program, append(setup.Args, rest...), agentEnv(os.Environ(), setup), stdin, stdout, stderr)
}

// launchTarget asks the daemon about the model: that it answers, that the
// model exists and can call tools; a short context is a warning.
func (c *apiClient) launchTarget(ctx context.Context, model string) (launchTarget, []string, error) {
	t := launchTarget{Base: c.base, Key: c.key, Model: model}
	if model == "" {
		var tags struct {
			Models []struct {
				Name string `json:"name"`
			} `json:"models"`
		}
		if err := c.getJSON(ctx, http.MethodGet, "/api/tags", nil, &tags); err != nil {
			return t, nil, err
		}
		switch len(tags.Models) {
		case 0:
			return t, nil, errors.New("the daemon serves no model yet: npud pull OWNER/NAME, then npud launch again")
		case 1:
			t.Model = tags.Models[0].Name
		default:
			names := make([]string, 0, len(tags.Models))
			for _, m := range tags.Models {
				names = append(names, m.Name)
			}
			return t, nil, fmt.Errorf("the daemon serves %d models: choose one with --model (%s)", len(names), strings.Join(names, ", "))
		}
	}
	var show struct {
		ModelInfo    map[string]any `json:"model_info"`
		Capabilities []string       `json:"capabilities"`
	}
	if err := c.getJSON(ctx, http.MethodPost, "/api/show", map[string]string{"model": t.Model}, &show); err != nil {
		return t, nil, fmt.Errorf("model %q: %w", t.Model, err)
	}
	if !slices.Contains(show.Capabilities, "tools") {
		return t, nil, fmt.Errorf("model %q cannot call tools (its capabilities: %s), and a coding agent works through tool calls: choose a model whose `npud show` lists tools",
			t.Model, strings.Join(show.Capabilities, ", "))
	}
	t.Context = servedContext(show.ModelInfo)
	var warnings []string
	switch {
	case t.Context == 0:
		warnings = append(warnings, fmt.Sprintf("the daemon does not say how long model %q's context is, so the agent is not told "+
			"(Claude Code then assumes its own default, far longer than a local model serves); a coding agent needs %d tokens or more", t.Model, launchMinContext))
	case t.Context < launchMinContext:
		warnings = append(warnings, fmt.Sprintf("model %q serves a context of %d tokens; a coding agent's own prompt and tools take thousands of them, so sessions will be short (%d or more is comfortable)",
			t.Model, t.Context, launchMinContext))
	}
	t.WebSocket = c.servesResponsesWebSocket(ctx)
	return t, warnings, nil
}

// servedContext is the context the daemon serves, from /api/show's
// model_info: npud's own key when the model has a prompt limit, else the
// architecture's.
func servedContext(info map[string]any) int {
	if n, ok := info["npud.context_length"].(float64); ok {
		return int(n)
	}
	arch, _ := info["general.architecture"].(string)
	n, _ := info[arch+".context_length"].(float64)
	return int(n)
}

// servesResponsesWebSocket tries the Responses API's WebSocket handshake:
// Codex uses that mode only for a provider that declares it.
func (c *apiClient) servesResponsesWebSocket(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	header := http.Header{}
	if c.key != "" {
		header.Set("Authorization", "Bearer "+c.key)
	}
	conn, resp, err := websocket.Dial(ctx, c.base+"/v1/responses", &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: header})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return false
	}
	_ = conn.Close(websocket.StatusNormalClosure, "npud launch: only checking")
	return true
}

// findProgram looks name up in the PATH given (the CLI's environment is
// passed in, as everywhere else in the commands).
func findProgram(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// agentEnv is environ without the variables setup unsets or sets, then
// setup's own.
func agentEnv(environ []string, setup agentSetup) []string {
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := setup.Env[k]; set || slices.Contains(setup.Unset, k) {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(setup.Env)) {
		env = append(env, k+"="+setup.Env[k])
	}
	return env
}

// runAgent runs the agent on this terminal and returns its exit code. Ctrl-C
// is the agent's: the terminal sends it to both, and npud (main does not
// catch it for launch) takes it here and does nothing, rather than die
// under the agent; caught, not ignored, so the agent does not inherit an
// ignored SIGINT. When ctx ends (npud is told to stop) the agent gets
// SIGTERM.
func runAgent(ctx context.Context, program string, args, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "npud launch: %s: %v\n", filepath.Base(program), err)
	return 1
}
