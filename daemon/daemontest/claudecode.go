package daemontest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// ClaudeCodeSession is what Claude Code's stream-json output (`-p …
// --output-format stream-json --verbose`) says of one session: each tool
// call the model made and each result Claude Code sent back, by id, and
// its closing result line (nil when there was none).
type ClaudeCodeSession struct {
	Calls     []ClaudeCodeCall
	ResultIDs []string // tool_use_id of each tool_result sent back
	Result    *ClaudeCodeResult
}

// ClaudeCodeCall is a tool_use block of an assistant message.
type ClaudeCodeCall struct{ ID, Name string }

// ClaudeCodeResult is the session's last line.
type ClaudeCodeResult struct {
	IsError       bool   `json:"is_error"`
	NumTurns      int    `json:"num_turns"`
	TerminalState string `json:"terminal_reason"`
}

// CallIDs are the ids of the session's tool calls, in order.
func (s ClaudeCodeSession) CallIDs() []string {
	ids := make([]string, len(s.Calls))
	for i, c := range s.Calls {
		ids[i] = c.ID
	}
	return ids
}

// ReadClaudeCode reads a session from Claude Code's stream-json output;
// lines that are not JSON objects (its own notes, such as that it does
// not know the model's name) are passed over.
func ReadClaudeCode(t testing.TB, out []byte) ClaudeCodeSession {
	t.Helper()
	var s ClaudeCodeSession
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("{")) {
			continue
		}
		var l struct {
			Type string `json:"type"`
			ClaudeCodeResult
			Message struct {
				Content []struct {
					Type      string `json:"type"`
					ID        string `json:"id"`
					Name      string `json:"name"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("Claude Code's line %s: %v", line, err)
		}
		for _, c := range l.Message.Content {
			switch {
			case l.Type == "assistant" && c.Type == "tool_use":
				s.Calls = append(s.Calls, ClaudeCodeCall{ID: c.ID, Name: c.Name})
			case l.Type == "user" && c.Type == "tool_result":
				s.ResultIDs = append(s.ResultIDs, c.ToolUseID)
			}
		}
		if l.Type == "result" {
			r := l.ClaudeCodeResult
			s.Result = &r
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}
