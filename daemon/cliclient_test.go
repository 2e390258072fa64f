package daemon_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/npud/npud/cli"
)

// npud runs an npud command (the CLI, a client of the server under test)
// in-process with stdin and no environment.
func npud(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.MainIO(t.Context(), args, func(string) string { return "" }, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}
