package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/npu"
)

// The model commands (list, ps, show, rm, cp, stop, run) talk to a running
// daemon over its Ollama API, as the Ollama CLI does, so habits carry over.

const clientUsage = `usage: npud %s [--host HOST] %s

The daemon's address: --host, else NPUD_HOST, else OLLAMA_HOST, else
127.0.0.1:11434; its API key: NPUD_API_KEY.
`

// apiClient is the model commands' connection to the daemon.
type apiClient struct {
	base  string
	key   string
	http  *http.Client
	think any // npud run --think: nil (the model's default), a bool or a level
}

// clientFlags parses the model commands' flags; args after them are
// returned.
func clientFlags(name, what string, args []string, getenv func(string) string, stdout, stderr io.Writer, extra func(*flag.FlagSet)) (*apiClient, []string, int) {
	fs := flag.NewFlagSet("npud "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "", "the daemon's address (default NPUD_HOST, OLLAMA_HOST, 127.0.0.1:11434)")
	if extra != nil {
		extra(fs)
	}
	rest, code := parseCommandFlags(fs, "npud "+name, args, stdout, stderr, func() { fmt.Fprintf(stdout, clientUsage, name, what) })
	if code >= 0 {
		return nil, nil, code
	}
	base, err := clientBase(*host, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "npud %s: %v\n", name, err)
		return nil, nil, 2
	}
	return &apiClient{base: base, key: getenv("NPUD_API_KEY"), http: &http.Client{}}, rest, -1
}

// parseCommandFlags parses a command's flags by the one rule
// (daemon.ParseFlagsAnywhere); -h prints the usage (head, then the flags)
// to stdout, and a bad flag is named on stderr. It returns the positional
// arguments and -1, or the exit code.
func parseCommandFlags(fs *flag.FlagSet, command string, args []string, stdout, stderr io.Writer, head func()) ([]string, int) {
	fs.SetOutput(io.Discard) // the error is printed once, below
	fs.Usage = func() {}
	rest, err := daemon.ParseFlagsAnywhere(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		head()
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil, 0
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v (%s -h lists its flags)\n", command, err, command)
		return nil, 2
	}
	return rest, -1
}

// wrongArgs says what a command takes when it got other positional
// arguments, and returns the exit code.
func wrongArgs(stderr io.Writer, name, what string, got []string) int {
	quoted := make([]string, len(got))
	for i, a := range got {
		quoted[i] = strconv.Quote(a)
	}
	fmt.Fprintf(stderr, "npud %s: takes %s, got %d argument(s): %s\n\n", name, orNothing(what), len(got), terminalSafe(strings.Join(quoted, " "), false))
	fmt.Fprintf(stderr, clientUsage, name, what)
	return 2
}

func orNothing(what string) string {
	if what == "" {
		return "no argument"
	}
	return what
}

// clientBase resolves the daemon's URL as Ollama's CLI does with
// OLLAMA_HOST: a host, host:port or URL.
func clientBase(flagHost string, getenv func(string) string) (string, error) {
	host := flagHost
	for _, v := range []string{"NPUD_HOST", "OLLAMA_HOST"} {
		if host == "" {
			host = getenv(v)
		}
	}
	if host == "" {
		host = "127.0.0.1:11434"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("daemon address %q: want HOST[:PORT] or a URL", host)
	}
	hostname, port := u.Hostname(), u.Port()
	if port == "" {
		port = "11434"
	}
	// OLLAMA_HOST=0.0.0.0:PORT is how a server is told to listen on every
	// address; a client talking to it means this machine, as Ollama's does.
	switch hostname {
	case "0.0.0.0", "":
		hostname = "127.0.0.1"
	case "::":
		hostname = "::1"
	}
	u.Host = net.JoinHostPort(hostname, port)
	return strings.TrimRight(u.String(), "/"), nil
}

// errNotRunning says how to start the daemon when nothing answers.
type errNotRunning struct{ base string }

func (e errNotRunning) Error() string {
	return fmt.Sprintf("no npud answers at %s: start it with `npud serve` (or `sudo npud service start`)", e.base)
}

// do sends a request and returns the response, whose status is a success;
// an error answer becomes its message.
func (c *apiClient) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	return c.send(ctx, method, path, "application/json", r)
}

// send is do with the body as it is, of the content type given.
func (c *apiClient) send(ctx context.Context, method, path, contentType string, r io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	if req.Body != nil && req.ContentLength == 0 {
		// A streamed body (a file) waits for the daemon's go-ahead: a
		// refusal (no key, a bad Host) then arrives before the file is
		// sent, and is what the command shows, not the broken pipe of a
		// server that closed while the file was still being written.
		req.Header.Set("Expect", "100-continue")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return nil, errNotRunning{c.base}
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		defer func() { _ = resp.Body.Close() }()
		return nil, c.unauthorized()
	}
	if resp.StatusCode >= 300 {
		defer func() { _ = resp.Body.Close() }()
		var e struct {
			Error any `json:"error"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(raw, &e) == nil && e.Error != nil {
			if m, ok := e.Error.(map[string]any); ok { // OpenAI's shape, for the routes npud answers that way
				return nil, errors.New(terminalSafe(fmt.Sprint(m["message"]), true))
			}
			return nil, errors.New(terminalSafe(fmt.Sprint(e.Error), true))
		}
		return nil, errors.New(terminalSafe(resp.Status+": "+strings.TrimSpace(string(raw)), true))
	}
	return resp, nil
}

// unauthorized is the advice for a 401 from the command line: the daemon's
// own text tells an HTTP client which header to send, which a person
// running npud does not set.
func (c *apiClient) unauthorized() error {
	if c.key == "" {
		return fmt.Errorf("the daemon at %s needs an API key: set NPUD_API_KEY=KEY for npud's commands", c.base)
	}
	return fmt.Errorf("the daemon at %s does not take the key in NPUD_API_KEY: set NPUD_API_KEY to one of its keys", c.base)
}

// getJSON decodes a successful answer into v.
func (c *apiClient) getJSON(ctx context.Context, method, path string, body, v any) error {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// modelCommand runs list, ps, show, rm, cp and stop.
func modelCommand(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	want := map[string]struct {
		what  string
		nargs int
	}{
		"list": {"", 0}, "ps": {"", 0}, "show": {"MODEL", 1}, "rm": {"MODEL", 1}, "cp": {"SOURCE DESTINATION", 2}, "stop": {"MODEL", 1},
	}[name]
	c, rest, code := clientFlags(name, want.what, args, getenv, stdout, stderr, nil)
	if code >= 0 {
		return code
	}
	if len(rest) != want.nargs {
		return wrongArgs(stderr, name, want.what, rest)
	}
	err := func() error {
		switch name {
		case "list":
			var out struct {
				Models []struct {
					Name       string `json:"name"`
					Size       int64  `json:"size"`
					ModifiedAt string `json:"modified_at"`
					Details    struct{ Format string }
				} `json:"models"`
				Unserved []struct { // npud's: pulled, but no engine serves them
					Name       string `json:"name"`
					Size       int64  `json:"size"`
					ModifiedAt string `json:"modified_at"`
					Why        string `json:"why"`
				} `json:"unserved"`
			}
			if err := c.getJSON(ctx, http.MethodGet, "/api/tags", nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSIZE\tFORMAT\tMODIFIED")
			for _, m := range out.Models {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", terminalSafe(m.Name, false), byteSize(m.Size), terminalSafe(m.Details.Format, false), ago(m.ModifiedAt))
			}
			for _, m := range out.Unserved {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", terminalSafe(m.Name, false), byteSize(m.Size), "NOT SERVED", ago(m.ModifiedAt))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, m := range out.Unserved {
				fmt.Fprintf(stdout, "\n%s is pulled but not served: %s\n(`npud doctor` says how to fix it; `npud rm %s` removes it)\n",
					terminalSafe(m.Name, false), terminalSafe(m.Why, true), terminalSafe(m.Name, false))
			}
			return nil
		case "ps":
			var out struct {
				Models []struct {
					Name          string `json:"name"`
					Size          int64  `json:"size"`
					Device        string `json:"device"`
					ContextLength int    `json:"context_length"`
					ExpiresAt     string `json:"expires_at"`
				} `json:"models"`
				Loading []struct {
					Name    string `json:"name"`
					Status  string `json:"status"`
					Seconds int64  `json:"seconds"`
				} `json:"loading"`
			}
			if err := c.getJSON(ctx, http.MethodGet, "/api/ps", nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSIZE\tDEVICE\tCONTEXT\tUNTIL")
			for _, m := range out.Models {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", terminalSafe(m.Name, false), byteSize(m.Size), terminalSafe(m.Device, false), m.ContextLength, until(m.ExpiresAt))
			}
			for _, m := range out.Loading { // "compiling for NPU (first time)… 42 s"
				fmt.Fprintf(tw, "%s\t-\t-\t-\t%s… %d s\n", terminalSafe(m.Name, false), terminalSafe(m.Status, false), m.Seconds)
			}
			return tw.Flush()
		case "show":
			var out struct {
				Details      map[string]any `json:"details"`
				ModelInfo    map[string]any `json:"model_info"`
				Capabilities []string       `json:"capabilities"`
				Modelfile    string         `json:"modelfile"`
				Parameters   string         `json:"parameters"`
			}
			if err := c.getJSON(ctx, http.MethodPost, "/api/show", map[string]string{"model": rest[0]}, &out); err != nil {
				return err
			}
			arch, _ := out.ModelInfo["general.architecture"].(string)
			safe := func(v any) string { return terminalSafe(fmt.Sprint(v), false) }
			fmt.Fprintf(stdout, "  Model\n    architecture    %s\n    parameters      %s\n    context length  %s\n",
				safe(arch), safe(out.Details["parameter_size"]), safe(out.ModelInfo[arch+".context_length"]))
			if v, ok := out.ModelInfo[arch+".embedding_length"]; ok {
				fmt.Fprintf(stdout, "    embedding length %s\n", safe(v))
			}
			fmt.Fprintf(stdout, "    format          %s\n    quantization    %s\n",
				safe(out.Details["format"]), safe(out.Details["quantization_level"]))
			switch r, ok := out.ModelInfo["npud.prompt_renderer"]; {
			case r == "genai":
				fmt.Fprintf(stdout, "    prompt          rendered by GenAI from the model's chat template (one npud does not reproduce)\n")
			case ok:
				fmt.Fprintf(stdout, "    prompt          rendered and counted by npud (%s template)\n", safe(r))
			}
			fmt.Fprintf(stdout, "\n  Capabilities\n")
			for _, cap := range out.Capabilities {
				fmt.Fprintf(stdout, "    %s\n", safe(cap))
			}
			// What the model's folder sets (npud-properties.json), or why
			// its file is refused.
			if params := strings.TrimSpace(out.Parameters); params != "" {
				fmt.Fprintf(stdout, "\n  Parameters (npud-properties.json)\n")
				for _, line := range strings.Split(params, "\n") {
					fmt.Fprintf(stdout, "    %s\n", safe(line))
				}
			}
			if refused, ok := out.ModelInfo["npud.properties_refused"]; ok {
				fmt.Fprintf(stdout, "\n  Parameters (npud-properties.json)\n    refused: %s\n", safe(refused))
			}
			return nil
		case "rm":
			if err := c.getJSON(ctx, http.MethodDelete, "/api/delete", map[string]string{"model": rest[0]}, nil); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "deleted %q\n", rest[0])
			return nil
		case "cp":
			if err := c.getJSON(ctx, http.MethodPost, "/api/copy", map[string]string{"source": rest[0], "destination": rest[1]}, nil); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "copied %q to %q\n", rest[0], rest[1])
			return nil
		case "stop":
			// Ollama's way to unload: an empty generate with keep_alive 0.
			return c.getJSON(ctx, http.MethodPost, "/api/generate", map[string]any{"model": rest[0], "keep_alive": 0}, nil)
		}
		return nil
	}()
	if err != nil {
		fmt.Fprintf(stderr, "npud %s: %s\n", name, terminalSafe(err.Error(), true))
		return 1
	}
	return 0
}

// ago is how long ago an RFC 3339 time was, for people.
func ago(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return terminalSafe(ts, false)
	}
	return humanDuration(time.Since(t)) + " ago"
}

// until is how long until an RFC 3339 time, "forever" far away.
func until(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	switch {
	case err != nil:
		return terminalSafe(ts, false)
	case t.Year() >= 9999:
		return "forever"
	}
	return "in " + humanDuration(time.Until(t))
}

func humanDuration(d time.Duration) string {
	switch d = max(d, 0); {
	case d < time.Minute:
		return count(int(d.Seconds()), "second")
	case d < time.Hour:
		return count(int(d.Minutes()), "minute")
	case d < 48*time.Hour:
		return count(int(d.Hours()), "hour")
	}
	return count(int(d.Hours()/24), "day")
}

// count is n units, for people: "1 minute", "2 minutes".
func count(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// runCommand runs `npud run MODEL [PROMPT]`: with a prompt (or a prompt on
// a stdin that is not a terminal), stream the answer and exit; otherwise
// an interactive chat.
func runCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	var verbose bool
	var think thinkFlag
	c, rest, code := clientFlags("run", "MODEL [PROMPT]", args, getenv, stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&verbose, "verbose", false, "print the timings the server reports")
		fs.Var(&think, "think", "a reasoning model thinks (--think), does not (--think=false), or at a level (--think=low|medium|high); unset: the model's default")
	})
	if code >= 0 {
		return code
	}
	c.think = think.value
	if len(rest) == 0 {
		return wrongArgs(stderr, "run", "MODEL [PROMPT]", rest)
	}
	model, prompt := rest[0], strings.Join(rest[1:], " ")
	if prompt == "" && !isTerminal(stdin) {
		b, err := io.ReadAll(io.LimitReader(stdin, 4<<20))
		if err != nil {
			fmt.Fprintf(stderr, "npud run: reading the prompt: %v\n", err)
			return 1
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt != "" {
		_, err := c.chat(ctx, model, []chatMessage{{Role: "user", Content: prompt}}, stdout, verbose, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "npud run: %s\n", terminalSafe(err.Error(), true))
			return 1
		}
		return 0
	}
	return c.interactive(ctx, model, stdin, stdout, stderr, verbose)
}

// thinkFlag is `npud run --think`, as Ollama's CLI spells it: alone it
// is true; =false, or a level for models that take one.
type thinkFlag struct{ value any }

func (f *thinkFlag) String() string {
	if f == nil || f.value == nil {
		return ""
	}
	return fmt.Sprint(f.value)
}

func (f *thinkFlag) Set(s string) error {
	switch s {
	case "true", "false":
		f.value = s == "true"
	case "low", "medium", "high":
		f.value = s
	default:
		return fmt.Errorf(`want true, false, low, medium or high, got %q`, s)
	}
	return nil
}

func (f *thinkFlag) IsBoolFlag() bool { return true }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chat streams one answer to stdout and returns it.
func (c *apiClient) chat(ctx context.Context, model string, msgs []chatMessage, stdout io.Writer, verbose bool, stderr io.Writer) (string, error) {
	body := map[string]any{"model": model, "messages": msgs, "stream": true}
	if c.think != nil {
		body["think"] = c.think
	}
	resp, err := c.do(ctx, http.MethodPost, "/api/chat", body)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var answer strings.Builder
	thinking := false // between "Thinking..." and "...done thinking."
	load := loadLine{w: stderr, terminal: isTerminal(stderr)}
	dec := json.NewDecoder(resp.Body)
	for {
		var line struct {
			Message struct {
				Content  string `json:"content"`
				Thinking string `json:"thinking"`
			} `json:"message"`
			Done               bool   `json:"done"`
			Error              string `json:"error"`
			Status             string `json:"status"` // npud's: how the model's load goes
			PromptEvalCount    int    `json:"prompt_eval_count"`
			PromptEvalDuration int64  `json:"prompt_eval_duration"`
			EvalCount          int    `json:"eval_count"`
			EvalDuration       int64  `json:"eval_duration"`
			TotalDuration      int64  `json:"total_duration"`
			LoadDuration       int64  `json:"load_duration"`
		}
		if err := dec.Decode(&line); err != nil {
			if ctx.Err() != nil {
				return answer.String(), ctx.Err()
			}
			return answer.String(), fmt.Errorf("the stream ended early: %w", err)
		}
		load.show(line.Status)
		if line.Error != "" {
			load.clear()
			return answer.String(), errors.New(terminalSafe(line.Error, true))
		}
		if line.Message.Content != "" || line.Message.Thinking != "" || line.Done {
			load.clear()
		}
		// A reasoning model's thinking is shown as Ollama's CLI shows it,
		// apart; only the answer goes into the conversation.
		if line.Message.Thinking != "" {
			if !thinking {
				fmt.Fprint(stdout, "Thinking...\n")
				thinking = true
			}
			fmt.Fprint(stdout, terminalSafe(line.Message.Thinking, true))
		}
		if thinking && line.Message.Content != "" {
			fmt.Fprint(stdout, "\n...done thinking.\n\n")
			thinking = false
		}
		fmt.Fprint(stdout, terminalSafe(line.Message.Content, true))
		answer.WriteString(line.Message.Content)
		if line.Done {
			fmt.Fprintln(stdout)
			if verbose {
				rate := 0.0
				if line.EvalDuration > 0 {
					rate = float64(line.EvalCount) / time.Duration(line.EvalDuration).Seconds()
				}
				fmt.Fprintf(stderr, "total duration:       %s\nload duration:        %s\nprompt eval count:    %d token(s)\nprompt eval duration: %s\neval count:           %d token(s)\neval duration:        %s\neval rate:            %.2f tokens/s\n",
					time.Duration(line.TotalDuration), time.Duration(line.LoadDuration), line.PromptEvalCount,
					time.Duration(line.PromptEvalDuration), line.EvalCount, time.Duration(line.EvalDuration), rate)
			}
			return answer.String(), nil
		}
	}
}

// interactiveHelp is what /? shows in a chat.
const interactiveHelp = `Available commands:
  /set system TEXT   set the system message
  /clear             forget the conversation
  /bye               leave
  /?, /help          this help

End a line with \ to continue the message on the next line; Ctrl-C stops an answer.
`

// interactive is a chat in the terminal: the history is kept; /bye ends,
// /clear forgets, /set system TEXT sets the system message; a line ending
// in a backslash continues on the next.
func (c *apiClient) interactive(ctx context.Context, model string, stdin io.Reader, stdout, stderr io.Writer, verbose bool) int {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 4<<20)
	var history []chatMessage
	var system string
	fmt.Fprintln(stdout, "Send a message (/? for help)")
	for {
		fmt.Fprint(stdout, ">>> ")
		var lines []string
		for in.Scan() {
			line := in.Text()
			if cont, ok := strings.CutSuffix(line, `\`); ok {
				lines = append(lines, cont)
				fmt.Fprint(stdout, "... ")
				continue
			}
			lines = append(lines, line)
			break
		}
		if len(lines) == 0 { // end of input
			fmt.Fprintln(stdout)
			return 0
		}
		text := strings.TrimSpace(strings.Join(lines, "\n"))
		switch {
		case text == "":
			continue
		case text == "/bye":
			return 0
		case text == "/clear":
			history = nil
			fmt.Fprintln(stdout, "Cleared session context")
			continue
		case strings.HasPrefix(text, "/set system "):
			system = strings.TrimPrefix(text, "/set system ")
			fmt.Fprintln(stdout, "Set system message.")
			continue
		case strings.HasPrefix(text, "/"):
			if text != "/?" && text != "/help" {
				fmt.Fprintf(stdout, "Unknown command %s\n", terminalSafe(strings.Fields(text)[0], false))
			}
			fmt.Fprint(stdout, interactiveHelp)
			continue
		}
		msgs := history
		if system != "" {
			msgs = append([]chatMessage{{Role: "system", Content: system}}, history...)
		}
		msgs = append(msgs, chatMessage{Role: "user", Content: text})
		genCtx, stop := interruptible(ctx)
		answer, err := c.chat(genCtx, model, msgs, stdout, verbose, stderr)
		stop()
		switch {
		case err != nil && genCtx.Err() != nil && ctx.Err() == nil:
			fmt.Fprintln(stdout) // Ctrl-C cancelled the answer, not the chat
			continue
		case err != nil:
			fmt.Fprintf(stderr, "npud run: %s\n", terminalSafe(err.Error(), true))
			if ctx.Err() != nil || errors.As(err, new(errNotRunning)) {
				return 1
			}
			continue
		}
		history = append(history, chatMessage{Role: "user", Content: text}, chatMessage{Role: "assistant", Content: answer})
	}
}

// pull has the daemon pull repo, handing each progress line to show.
func (c *apiClient) pull(ctx context.Context, repo string, show func(npu.PullProgress)) error {
	resp, err := c.do(ctx, http.MethodPost, "/api/pull", map[string]any{"model": repo, "stream": true})
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	dec := json.NewDecoder(resp.Body)
	for {
		var line struct {
			Status    string `json:"status"`
			Digest    string `json:"digest"`
			Total     int64  `json:"total"`
			Completed int64  `json:"completed"`
			Error     string `json:"error"`
		}
		if err := dec.Decode(&line); err != nil {
			return fmt.Errorf("the progress ended early: %w", err)
		}
		switch {
		case line.Error != "":
			return errors.New(terminalSafe(line.Error, true))
		case line.Status == "success":
			return nil
		}
		show(npu.PullProgress{Status: line.Status, Digest: line.Digest, Total: line.Total, Completed: line.Completed})
	}
}
