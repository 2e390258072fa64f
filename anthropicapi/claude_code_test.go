package anthropicapi_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// claudeCode is Claude Code's binary as testdata/agents pins it (npm
// installs the one for this platform), or "" when it is not installed.
func claudeCode(t *testing.T) string {
	t.Helper()
	daemontest.Integration(t, "runs Claude Code")
	matches, _ := filepath.Glob(filepath.Join("..", "testdata", "agents", "node_modules", "@anthropic-ai", "claude-code-*", "claude"))
	if len(matches) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("Claude Code is not installed (make test runs npm ci in testdata/agents)")
		}
		t.Skip("Claude Code is not installed: run npm ci in testdata/agents")
	}
	abs, err := filepath.Abs(matches[0])
	require.NoError(t, err)
	return abs
}

// Claude Code, offline against npud on loopback, through a whole tool
// loop: the model (the simulated engine) calls Claude Code's Read tool,
// Claude Code runs it in a scratch folder and sends the result back, and
// the model's answer ends the session. The simulated model makes up the
// tool's arguments, so Claude Code refuses them: the result goes back as
// an error (is_error), which is still the loop's round trip.
func TestClaudeCodeToolLoop(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's tool call drives the loop")
	bin := claudeCode(t)
	srv := daemontest.StartSim(t, nil, nil)
	work, home := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("hello\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Read notes.txt", "--model", "sim",
		"--tools", "Read", "--allowedTools", "Read", "--output-format", "stream-json", "--verbose")
	cmd.Dir = work
	cmd.WaitDelay = 5 * time.Second
	// Only what it needs: no key, proxy or setting of the test's own.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=unused-without-keys",
		"ANTHROPIC_DEFAULT_HAIKU_MODEL=sim", "ANTHROPIC_SMALL_FAST_MODEL=sim",
		// One tool declared, no tool search: the model's call is Read.
		"ENABLE_TOOL_SEARCH=false",
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "claude: %s\n%s", stderr.String(), out)

	session := daemontest.ReadClaudeCode(t, out)
	require.Len(t, session.Calls, 1, "%s", out)
	assert.Equal(t, "Read", session.Calls[0].Name)
	assert.Equal(t, session.CallIDs(), session.ResultIDs, "Claude Code ran the call and sent its result back")
	result := session.Result
	require.NotNil(t, result, "%s", out)
	assert.False(t, result.IsError, "%s", out)
	assert.Equal(t, 2, result.NumTurns)
	assert.Equal(t, "completed", result.TerminalState)
}
