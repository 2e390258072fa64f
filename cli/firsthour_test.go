package cli_test

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// npudEnv runs npud with the environment given.
func npudEnv(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.MainIO(t.Context(), args, func(k string) string { return vars[k] }, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Issue 35: with keys on, the CLI passed on the daemon's advice for HTTP
// clients (send Authorization: Bearer KEY); a person running npud sets
// NPUD_API_KEY.
func TestUnauthorizedSaysNPUDAPIKey(t *testing.T) {
	const key = "k-first-hour-0123456789abcdef"
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.APIKeys = []daemon.APIKey{{Name: "dev", Key: key}} }, nil)
	for _, tc := range []struct {
		name, key string
		code      int
		says      string
	}{
		{"no key", "", 1, "needs an API key: set NPUD_API_KEY=KEY"},
		{"a wrong key", "k-wrong-0123456789abcdef", 1, "does not take the key in NPUD_API_KEY"},
		{"the key", key, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := npudEnv(t, map[string]string{"NPUD_API_KEY": tc.key}, "list", "--host", srv.URL)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.says)
			assert.NotContains(t, errOut, "Authorization: Bearer")
		})
	}
}

// Issue 35: `npud launch claude` gave Claude Code no context window, so it
// assumed its default for an unknown model (and warned) while npud serves
// far less; Codex and OpenCode got theirs. Claude Code reads an unknown
// model's window from CLAUDE_CODE_MAX_CONTEXT_TOKENS.
func TestLaunchClaudeGetsTheContextWindow(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	code, shown, errOut := npudEnv(t, nil, "show", "sim", "--host", srv.URL)
	require.Equal(t, 0, code, errOut)
	m := regexp.MustCompile(`context length\s+(\d+)`).FindStringSubmatch(shown)
	require.Len(t, m, 2, shown)

	code, printed, errOut := npudEnv(t, nil, "launch", "claude", "--print", "--host", srv.URL, "--model", "sim")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, printed, "\nexport CLAUDE_CODE_MAX_CONTEXT_TOKENS="+m[1]+"\n")
}

// Issue 35: OLLAMA_HOST=0.0.0.0:PORT, common among Ollama users (it is how
// the server is told to listen everywhere), made every command fail the
// daemon's Host check; a client talking to a wildcard address means this
// machine. And `npud -v` prints the version.
func TestWildcardHostMeansLoopback(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, host := range []string{"0.0.0.0:" + port, "http://0.0.0.0:" + port, ":" + port} {
		t.Run(host, func(t *testing.T) {
			code, out, errOut := npudEnv(t, map[string]string{"OLLAMA_HOST": host}, "list")
			assert.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "sim")
		})
	}

	code, out, _ := npudEnv(t, nil, "-v")
	assert.Equal(t, 0, code)
	assert.Equal(t, "npud "+daemon.Version+"\n", out)
}

// Issue 35: an interactive `npud run` showed no way to its commands; it
// says "/? for help", as Ollama's does, and /? lists them.
func TestRunInteractiveShowsHelp(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	cmd := exec.CommandContext(t.Context(), daemontest.BuildNPUD(t), "run", "--host", srv.URL, "sim")
	tty, seen, waitFor := chatThroughPTY(t, cmd)
	waitFor("Send a message (/? for help)")
	waitFor(">>> ")
	_, err := io.WriteString(tty, "/?\n")
	require.NoError(t, err)
	waitFor("/set system TEXT")
	waitFor("/bye ")
	seen.Reset()
	_, err = io.WriteString(tty, "/nope\n")
	require.NoError(t, err)
	waitFor("Unknown command /nope")
	_, err = io.WriteString(tty, "/bye\n")
	require.NoError(t, err)
	assert.NoError(t, cmd.Wait())
}

// Issue 35: "address already in use" said nothing of how to choose another
// address, nor of the usual culprit: an Ollama on 11434, npud's port too.
func TestServeOnATakenAddressSaysWhatToDo(t *testing.T) {
	taken, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	code, _, errOut := npudEnv(t, nil, "serve", "--engine", "sim", "--listen", taken.Addr().String())
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "address already in use")
	assert.Contains(t, errOut, "Ollama, whose port 11434 npud shares")
	assert.Contains(t, errOut, "--listen 127.0.0.1:11435 (or NPUD_LISTEN")
}
