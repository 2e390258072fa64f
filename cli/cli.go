package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
	"github.com/npud/npud/npu/modelstore"
)

const usage = `npud: a streaming LLM server for Intel NPUs (OpenAI- and Ollama-compatible)

Usage:
  npud serve [flags]   run the server (npud serve -h lists flags)
  npud pull OWNER/NAME the running daemon pulls an OpenVINO IR model from its hub, with progress
                       (whatever engine serves; auto then serves the model, without a restart)
  npud pull --local [flags] OWNER/NAME
                       download it into --models-dir without a daemon (flags as for serve:
                       --models-dir, --hub-endpoint)
  npud config check [--config FILE] [flags]
                       validate the configuration (file, NPUD_* environment, flags)
                       and print the effective settings, secrets masked
  npud run MODEL [PROMPT]
                       chat with a model of the running daemon (a prompt: answer and exit;
                       none: an interactive chat; Ctrl-C stops an answer); --verbose timings,
                       --think[=false|low|medium|high] a reasoning model's thinking, shown apart
  npud launch codex|claude|opencode [--model MODEL] [--print]
                       start a coding agent pointed at the running daemon (checks the model
                       can call tools; --print shows the agent's configuration instead)
  npud transcribe FILE [--model MODEL] [--format text|json|srt|vtt|verbose_json] [--language xx] [--translate]
                       the running daemon's speech model transcribes (or translates) an audio file
  npud list | ps | show MODEL | rm MODEL | cp SOURCE DESTINATION | stop MODEL
                       the running daemon's models, as Ollama's CLI (stop unloads a model)
                       (--host, else NPUD_HOST, OLLAMA_HOST, 127.0.0.1:11434; key NPUD_API_KEY)
  npud service install | uninstall | start | stop | restart | status
                       manage npud as an OS service (systemd unit, Windows service)
  npud bench [flags]   load-test a streaming endpoint (OpenAI SSE or Ollama NDJSON),
                       npud's or any other; npud bench -h lists flags
  npud doctor [--json] why the NPU is not used, and how to fix it (exit 0: a real engine is ready)
  npud devices         list the devices OpenVINO sees
  npud version | -v    print the version
`

// Main runs the npud command line and returns the process exit code.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return MainIO(ctx, args, getenv, os.Stdin, stdout, stderr)
}

// MainIO is Main with the standard input given (npud run reads its prompt
// or its chat from it).
func MainIO(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stderr)
	case "doctor":
		return doctor(ctx, args[1:], getenv, stdout, stderr)
	case "worker":
		// Started by the daemon only, with its configuration in the
		// environment: not in the usage.
		if !daemon.IsWorker() {
			fmt.Fprintln(stderr, "npud worker is started by npud serve for its engine (--isolation process), not by hand")
			return 2
		}
		return daemon.RunWorker(ctx)
	case "pull":
		return pull(ctx, args[1:], getenv, stdout, stderr)
	case "service":
		return serviceMain(args[1:], getenv, stdout, stderr)
	case "run":
		return runCommand(ctx, args[1:], getenv, stdin, stdout, stderr)
	case "launch":
		return launchCommand(ctx, args[1:], getenv, stdin, stdout, stderr)
	case "transcribe":
		return transcribeCommand(ctx, args[1:], getenv, stdout, stderr)
	case "list", "ls", "ps", "show", "rm", "cp", "stop":
		name := args[0]
		if name == "ls" {
			name = "list"
		}
		return modelCommand(ctx, name, args[1:], getenv, stdout, stderr)
	case "install", "uninstall", "start", "restart", "status":
		// Not aliases: `npud stop MODEL` is an Ollama habit, and a service
		// verb at the top level would act on the service instead.
		fmt.Fprintf(stderr, "npud %s: the service commands are under `npud service`: npud service %s\n", args[0], args[0])
		return 2
	case "bench":
		return benchCommand(ctx, args[1:], getenv, stdout, stderr)
	case "config":
		return configCommand(args[1:], getenv, stdout, stderr)
	case "devices":
		if len(args) > 1 {
			if isHelp(args[1]) && len(args) == 2 {
				fmt.Fprintln(stdout, "usage: npud devices\n\nlists the devices OpenVINO sees")
				return 0
			}
			fmt.Fprintf(stderr, "npud devices takes no arguments, got %q\n", strings.Join(args[1:], " "))
			return 2
		}
		cfg, err := daemon.ParseServe(nil, getenv, io.Discard)
		if err != nil {
			fmt.Fprintf(stderr, "npud devices: %v\n", err)
			return 2
		}
		if err := printDevices(cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "npud devices: %v\n", err)
			return 1
		}
		return 0
	case "version", "--version", "-version", "-v", "--v":
		if len(args) > 1 && !(isHelp(args[1]) && len(args) == 2) {
			fmt.Fprintf(stderr, "npud version takes no arguments, got %q\n", strings.Join(args[1:], " "))
			return 2
		}
		fmt.Fprintf(stdout, "npud %s\n", daemon.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "npud: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	// Under the Windows service manager, Start and Stop replace signals.
	if code, ok := runUnderServiceManager(func(ctx context.Context) int { return daemon.Run(ctx, args, getenv, stderr) }); ok {
		return code
	}
	return daemon.Run(ctx, args, getenv, stderr)
}

// pull asks the running daemon to pull a model, showing its progress;
// with --local it downloads into the models directory itself, with no
// daemon (before the service first starts, say).
func pull(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if rest, local := cutLocal(args); local {
		return pullLocal(ctx, rest, getenv, stdout, stderr)
	}
	var hubEndpoint string
	c, rest, code := clientFlags("pull", "OWNER/NAME   (or: npud pull --local [--models-dir DIR] [--hub-endpoint URL] OWNER/NAME)", args, getenv, stdout, stderr,
		func(fs *flag.FlagSet) {
			fs.Bool("local", false, "pull into --models-dir directly, with no daemon (any build; then serve's flags: --models-dir, --hub-endpoint, --hub-token)")
			fs.StringVar(&hubEndpoint, "hub-endpoint", "", "with --local only: the daemon pulls from its own hub")
		})
	if code >= 0 {
		return code
	}
	if hubEndpoint != "" {
		fmt.Fprintf(stderr, "npud pull: --hub-endpoint: %s\n", daemonPullsNote)
		return 2
	}
	if len(rest) != 1 {
		return wrongArgs(stderr, "pull", "OWNER/NAME", rest)
	}
	if err := c.pull(ctx, rest[0], pullPrinter(stdout, time.Now)); err != nil {
		fmt.Fprintf(stderr, "npud pull: %s\n", terminalSafe(err.Error(), true))
		if getenv("HF_ENDPOINT") != "" && !errors.As(err, new(errNotRunning)) {
			fmt.Fprintf(stderr, "npud pull: HF_ENDPOINT is set here, but %s\n", daemonPullsNote)
		}
		return 1
	}
	fmt.Fprintf(stdout, "success: %s\n", rest[0])
	return 0
}

// daemonPullsNote says where the hub of `npud pull` is set: the daemon
// pulls, so this command's environment and flags do not reach it.
const daemonPullsNote = "the daemon pulls, from its own hub: start it with --hub-endpoint URL " +
	"(or NPUD_HUB_ENDPOINT, or HF_ENDPOINT in its environment; for the service, in its unit or config file), " +
	"or pull without it: npud pull --local --hub-endpoint URL OWNER/NAME"

// cutLocal takes --local out of a pull's arguments, wherever it is before
// "--".
func cutLocal(args []string) ([]string, bool) {
	for i, a := range args {
		switch a {
		case "--":
			return args, false
		case "--local", "-local", "--local=true", "-local=true":
			return append(slices.Clone(args[:i]), args[i+1:]...), true
		}
	}
	return args, false
}

// pullLocal downloads a model repository into the models directory; it
// needs no engine and no daemon, so it works in every build.
func pullLocal(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const usage = "usage: npud pull --local [--models-dir DIR] [--hub-endpoint URL] OWNER/NAME"
	for _, a := range args {
		if a == "--" {
			break
		}
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "host" {
			fmt.Fprintf(stderr, "npud pull: --local pulls with no daemon, so it takes no --host\n%s\n", usage)
			return 2
		}
	}
	cfg, rest, err := daemon.ParseServeWithArgs(args, getenv, io.Discard)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, usage+"\n\nand the flags of npud serve (npud serve -h)")
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "npud pull: %v\n%s\n", err, usage)
		return 2
	case len(rest) != 1:
		fmt.Fprintf(stderr, "npud pull: takes OWNER/NAME, got %d argument(s)\n%s\n", len(rest), usage)
		return 2
	}
	repo := rest[0]
	err = modelstore.New(cfg.ModelsDir, cfg.HubClient()).Pull(ctx, repo, pullPrinter(stdout, time.Now))
	if err != nil {
		err = daemon.ExplainModelsDir(cfg.ModelsDir, err)
		fmt.Fprintf(stderr, "npud pull: %s\n", terminalSafe(err.Error(), true))
		return 1
	}
	fmt.Fprintf(stdout, "success: model %q in %s\n", hub.ModelName(repo), cfg.ModelsDir)
	return 0
}

// pullPrinter prints a pull's progress a line at a time: each step once,
// and the bytes of a file at most every second (a multi-GB file shows its
// bytes moving) and when it is complete.
func pullPrinter(w io.Writer, now func() time.Time) func(npu.PullProgress) {
	last, lastAt, lastLine := "", time.Time{}, ""
	return func(p npu.PullProgress) {
		complete := p.Total > 0 && p.Completed == p.Total
		if p.Status == last && !complete && now().Sub(lastAt) < time.Second {
			return
		}
		status := terminalSafe(p.Status, false) // file names from the hub
		line := status
		if p.Total > 0 {
			line = fmt.Sprintf("%s %s/%s (%d%%)", status, byteSize(p.Completed), byteSize(p.Total), p.Completed*100/p.Total)
		}
		if line == lastLine {
			return // the hub reports a file complete when its bytes are in and again once verified
		}
		last, lastAt, lastLine = p.Status, now(), line
		fmt.Fprintln(w, line)
	}
}

// byteSize is n in the largest binary unit that keeps it at least 1.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// configCommand runs `npud config check`: the same parsing and validation
// as serve, then the effective configuration in the file's format.
func configCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const usage = "usage: npud config check [--config FILE] [serve flags]: validate the configuration as serve reads it and print the effective one"
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, usage) // like every other command's --help
		return 0
	}
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "npud config: "+usage)
		return 2
	}
	var effective strings.Builder
	err := daemon.CheckConfig(args[1:], getenv, &effective, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "npud config check: invalid configuration:\n%v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "# npud: effective configuration (file < NPUD_* environment < flags); secrets masked")
	fmt.Fprint(stdout, effective.String())
	return 0
}
