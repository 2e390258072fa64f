package chatfmt

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generatedQwenDeepSeekConversation is a conversation of up to seven messages drawn
// from pieces that reach the templates' corners: every role (and one no
// template knows), calls with arguments that are objects, other JSON and
// no JSON, reasoning in the content and apart, tool results in and out of
// place, and strings minja prints in its own way.
func generatedQwenDeepSeekConversation(r *rand.Rand) Conversation {
	contents := []string{"", "Hi", "<think>\nr1\n</think>\n\nans", "a</think>b</think>c", "<think>x",
		"<tool_response>t</tool_response>", "\n\nlead", "Xi'an \\", "日本 🙂 \"q\"", "end\\"}
	args := []string{`{"city": "Oslo"}`, `{"s": "Xi'an", "t": "a\\", "n": [1, 2.5, 1e7, true, null, {}], "o": {"x": []}}`,
		`not json`, `[1, 2]`, `"str"`, `{}`, ` {"a":1} `, `3`, `2.5`, `true`, `null`, ``}
	roles := []string{"user", "assistant", "tool", "system", "user", "assistant", "tool", "developer"}
	tools := []json.RawMessage{
		json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "W", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`),
		json.RawMessage(`{"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}, "x": [1.5e7, false, "it's"]}}`),
	}
	c := Conversation{AddGenerationPrompt: r.IntN(3) > 0, Specials: Specials{BOS: "<B>", EOS: "<E>"}}
	if r.IntN(4) == 0 {
		c.Specials.BOS = ""
	}
	if r.IntN(2) == 0 {
		think := r.IntN(2) == 0
		c.Think = &think
	}
	if r.IntN(2) == 0 {
		c.Tools = tools[:1+r.IntN(2)]
	}
	for range r.IntN(8) {
		m := Message{Role: roles[r.IntN(len(roles))], Content: contents[r.IntN(len(contents))]}
		if m.Role == "assistant" && r.IntN(2) == 0 {
			for range 1 + r.IntN(2) {
				m.ToolCalls = append(m.ToolCalls, Call{ID: "call_1", Name: "get_weather", Arguments: args[r.IntN(len(args))]})
			}
		}
		if m.Role == "assistant" && r.IntN(3) == 0 {
			m.ReasoningContent = contents[r.IntN(len(contents))]
		}
		if m.Role == "tool" {
			m.ToolCallID, m.Name = "call_1", "get_weather"
		}
		c.Messages = append(c.Messages, m)
	}
	return c
}

// templateMessages are c's messages as npud hands them to GenAI: a call's
// arguments the JSON value their text holds (a string when it holds
// none), keys absent when empty.
func templateMessages(c Conversation) []map[string]any {
	out := []map[string]any{}
	for _, m := range c.Messages {
		o := map[string]any{"role": m.Role, "content": m.Content}
		if len(m.ToolCalls) > 0 {
			var calls []map[string]any
			for _, tc := range m.ToolCalls {
				var args any = tc.Arguments
				if json.Valid([]byte(tc.Arguments)) {
					args = json.RawMessage(tc.Arguments)
				}
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": args}})
			}
			o["tool_calls"] = calls
		}
		if m.ToolCallID != "" {
			o["tool_call_id"] = m.ToolCallID
		}
		if m.Name != "" {
			o["name"] = m.Name
		}
		if m.ReasoningContent != "" {
			o["reasoning_content"] = m.ReasoningContent
		}
		out = append(out, o)
	}
	return out
}

// Beyond the corpus: conversations generated from a fixed seed, rendered
// by npud's renderers and by the official GenAI wheel, are the same text,
// or refused by both.
func TestQwenDeepSeekRenderersMatchGenAIOnGeneratedConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("renders through the official OpenVINO GenAI wheel: not with -short")
	}
	venv := os.Getenv("NPUD_OPENVINO_VENV")
	if venv == "" {
		t.Skip("NPUD_OPENVINO_VENV is not set: the checks against the official OpenVINO wheels run in make test")
	}
	templates := []string{"Qwen--Qwen2.5-3B-Instruct", "Qwen--Qwen3-1.7B", "deepseek-ai--DeepSeek-R1"}
	type genaiCase struct {
		Template            string            `json:"template"`
		Messages            []map[string]any  `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		Think               *bool             `json:"think"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
		BOS                 string            `json:"bos_token"`
		EOS                 string            `json:"eos_token"`
	}
	r := rand.New(rand.NewPCG(39, 1))
	var convs []Conversation
	var cases []genaiCase
	for range 300 {
		c := generatedQwenDeepSeekConversation(r)
		for _, name := range templates {
			convs = append(convs, c)
			cases = append(cases, genaiCase{name, templateMessages(c), c.Tools, c.Think, c.AddGenerationPrompt, c.Specials.BOS, c.Specials.EOS})
		}
	}
	in, err := json.Marshal(cases)
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"),
		filepath.Join(templatesDir, "render_cases.py"), "../../testdata/openvino/tinymodel/model")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var results []struct {
		Text  *string `json:"text"`
		Error string  `json:"error"`
	}
	require.NoError(t, json.Unmarshal(out, &results))
	require.Len(t, results, len(cases))
	for i, c := range convs {
		text, err := RendererFor(mustTemplate(t, cases[i].Template))
		require.NoError(t, err)
		got, err := text.Render(c)
		msgs, _ := json.Marshal(cases[i].Messages)
		if results[i].Text == nil {
			assert.Error(t, err, "%s %s: GenAI refused it (%s), npud rendered %q", cases[i].Template, msgs, results[i].Error, got)
			continue
		}
		if assert.NoError(t, err, "%s %s", cases[i].Template, msgs) {
			assert.Equal(t, *results[i].Text, got, "%s %s think=%v tools=%d", cases[i].Template, msgs, c.Think, len(c.Tools))
		}
	}
}

func mustTemplate(t *testing.T, name string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(templatesDir, name+".jinja"))
	require.NoError(t, err)
	return string(text)
}
