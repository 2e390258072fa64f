package daemon_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sse reads an OpenAI stream: its text, the error events' codes, and
// whether it ended with [DONE].
func sse(t *testing.T, resp *http.Response) (text string, codes []string, done bool) {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error *struct{ Code string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		if ev.Error != nil {
			codes = append(codes, ev.Error.Code)
		}
		for _, c := range ev.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	return b.String(), codes, done
}
