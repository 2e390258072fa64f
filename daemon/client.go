package daemon

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
	"strings"
	"text/tabwriter"
	"time"

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
	base string
	key  string
	http *http.Client
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
	fs.Usage = func() { fmt.Fprintf(stdout, clientUsage, name, what); fs.SetOutput(stdout); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, 0
		}
		return nil, nil, 2
	}
	base, err := clientBase(*host, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "npud %s: %v\n", name, err)
		return nil, nil, 2
	}
	return &apiClient{base: base, key: getenv("NPUD_API_KEY"), http: &http.Client{}}, fs.Args(), -1
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
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "11434")
	}
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
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
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
	if resp.StatusCode >= 300 {
		defer func() { _ = resp.Body.Close() }()
		var e struct {
			Error any `json:"error"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(raw, &e) == nil && e.Error != nil {
			if m, ok := e.Error.(map[string]any); ok { // OpenAI's shape, for the routes npud answers that way
				return nil, fmt.Errorf("%v", m["message"])
			}
			return nil, fmt.Errorf("%v", e.Error)
		}
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	return resp, nil
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
		fmt.Fprintf(stderr, clientUsage, name, want.what)
		return 2
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
			}
			if err := c.getJSON(ctx, http.MethodGet, "/api/tags", nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSIZE\tFORMAT\tMODIFIED")
			for _, m := range out.Models {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, byteSize(m.Size), m.Details.Format, ago(m.ModifiedAt))
			}
			return tw.Flush()
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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", m.Name, byteSize(m.Size), m.Device, m.ContextLength, until(m.ExpiresAt))
			}
			for _, m := range out.Loading { // "compiling for NPU (first time)… 42 s"
				fmt.Fprintf(tw, "%s\t-\t-\t-\t%s… %d s\n", oneLine(m.Name), oneLine(m.Status), m.Seconds)
			}
			return tw.Flush()
		case "show":
			var out struct {
				Details      map[string]any `json:"details"`
				ModelInfo    map[string]any `json:"model_info"`
				Capabilities []string       `json:"capabilities"`
				Modelfile    string         `json:"modelfile"`
			}
			if err := c.getJSON(ctx, http.MethodPost, "/api/show", map[string]string{"model": rest[0]}, &out); err != nil {
				return err
			}
			arch, _ := out.ModelInfo["general.architecture"].(string)
			fmt.Fprintf(stdout, "  Model\n    architecture    %s\n    parameters      %v\n    context length  %v\n",
				arch, out.Details["parameter_size"], out.ModelInfo[arch+".context_length"])
			if v, ok := out.ModelInfo[arch+".embedding_length"]; ok {
				fmt.Fprintf(stdout, "    embedding length %v\n", v)
			}
			fmt.Fprintf(stdout, "    format          %v\n    quantization    %v\n\n  Capabilities\n",
				out.Details["format"], out.Details["quantization_level"])
			for _, cap := range out.Capabilities {
				fmt.Fprintf(stdout, "    %s\n", cap)
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
		fmt.Fprintf(stderr, "npud %s: %v\n", name, err)
		return 1
	}
	return 0
}

// ago is how long ago an RFC 3339 time was, for people.
func ago(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	return humanDuration(time.Since(t)) + " ago"
}

// until is how long until an RFC 3339 time, "forever" far away.
func until(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	switch {
	case err != nil:
		return ts
	case t.Year() >= 9999:
		return "forever"
	}
	return "in " + humanDuration(time.Until(t))
}

func humanDuration(d time.Duration) string {
	switch d = max(d, 0); {
	case d < time.Minute:
		return fmt.Sprintf("%d seconds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d minutes", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d hours", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// runCommand runs `npud run MODEL [PROMPT]`: with a prompt (or a prompt on
// a stdin that is not a terminal), stream the answer and exit; otherwise
// an interactive chat.
func runCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	var verbose bool
	c, rest, code := clientFlags("run", "MODEL [PROMPT]", args, getenv, stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&verbose, "verbose", false, "print the timings the server reports")
	})
	if code >= 0 {
		return code
	}
	if len(rest) == 0 {
		fmt.Fprintf(stderr, clientUsage, "run", "MODEL [PROMPT]")
		return 2
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
			fmt.Fprintf(stderr, "npud run: %v\n", err)
			return 1
		}
		return 0
	}
	return c.interactive(ctx, model, stdin, stdout, stderr, verbose)
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chat streams one answer to stdout and returns it.
func (c *apiClient) chat(ctx context.Context, model string, msgs []chatMessage, stdout io.Writer, verbose bool, stderr io.Writer) (string, error) {
	resp, err := c.do(ctx, http.MethodPost, "/api/chat", map[string]any{"model": model, "messages": msgs, "stream": true})
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
			return answer.String(), errors.New(line.Error)
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
			fmt.Fprint(stdout, line.Message.Thinking)
		}
		if thinking && line.Message.Content != "" {
			fmt.Fprint(stdout, "\n...done thinking.\n\n")
			thinking = false
		}
		fmt.Fprint(stdout, line.Message.Content)
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

// interactive is a chat in the terminal: the history is kept; /bye ends,
// /clear forgets, /set system TEXT sets the system message; a line ending
// in a backslash continues on the next.
func (c *apiClient) interactive(ctx context.Context, model string, stdin io.Reader, stdout, stderr io.Writer, verbose bool) int {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 4<<20)
	var history []chatMessage
	var system string
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
			fmt.Fprintln(stdout, "Commands: /bye, /clear, /set system TEXT")
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
			fmt.Fprintf(stderr, "npud run: %v\n", err)
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
			return errors.New(line.Error)
		case line.Status == "success":
			return nil
		}
		show(npu.PullProgress{Status: line.Status, Digest: line.Digest, Total: line.Total, Completed: line.Completed})
	}
}
