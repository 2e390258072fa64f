package chatfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pieces generated conversations are made of: the corner cases of
// the templates (whitespace they trim, markup in content, ids of nine
// bytes that are not nine characters, arguments that are no object or no
// JSON, tools with a "return", empty schemas and numbers to print).
var (
	genTexts = []string{"Say hello", "", "  padded \n", "Tromsø −3 °C 🌧️", `quote " and \ backslash`,
		"line\nbreak\ttab", `{"json": 1}`, "<|eot_id|>[INST]", "Hey", "\u0001ctl\u007f"}
	genIDs   = []string{"a1B2c3D4e", "call_1", "", "ÆØÅabc", "123456789"}
	genNames = []string{"get_weather", "get_time", "ñame"}
	genArgs  = []string{`{"city": "Oslo"}`, `{}`, `{"a": [1, 2.50, -0.0, 1e2, {}, []], "b": null, "c": true}`,
		`not json`, `"a string"`, `[1, 2]`, `{"nested": {"deep": {"x": "ü\n"}}}`, ``}
	genTools = []string{
		`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name"}}, "required": ["city"]}}}`,
		`{"type": "function", "function": {"name": "get_time", "description": "Time \"now\" in ü", "parameters": {"type": "object", "properties": {}}, "return": {"type": "string"}}}`,
		`{"type": "function", "function": {"name": "empty", "parameters": {"type": "object", "properties": {}, "required": []}}}`,
		`{"type": "function", "function": {"name": "nums", "description": "", "parameters": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 1.5e3, "default": 2.50}}}, "strict": true}}`,
	}
)

// generatedConversation is a conversation drawn from r: half of them
// well formed (an optional system message, turns, calls answered by
// results, perhaps a prefill), half of roles in any order.
func generatedConversation(r *rand.Rand) Conversation {
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	c := Conversation{AddGenerationPrompt: r.IntN(5) > 0}
	calls := func() []Call {
		out := make([]Call, 1+r.IntN(2))
		for i := range out {
			out[i] = Call{ID: pick(genIDs), Name: pick(genNames), Arguments: pick(genArgs)}
		}
		return out
	}
	if r.IntN(2) == 0 {
		if r.IntN(2) == 0 {
			c.Messages = append(c.Messages, Message{Role: "system", Content: pick(genTexts)})
		}
		for turn := range 1 + r.IntN(3) {
			if turn > 0 {
				if r.IntN(3) == 0 {
					m := Message{Role: "assistant", Content: pick([]string{"", "Let me look."}), ToolCalls: calls()}
					c.Messages = append(c.Messages, m)
					for _, call := range m.ToolCalls {
						c.Messages = append(c.Messages, Message{Role: "tool", Content: pick(genTexts), ToolCallID: call.ID, Name: call.Name})
					}
				}
				c.Messages = append(c.Messages, Message{Role: "assistant", Content: pick(genTexts)})
			}
			c.Messages = append(c.Messages, Message{Role: "user", Content: pick(genTexts)})
		}
		if !c.AddGenerationPrompt {
			c.Messages = append(c.Messages, Message{Role: "assistant", Content: pick(genTexts)})
		}
	} else {
		for range 1 + r.IntN(5) {
			m := Message{Role: pick([]string{"system", "user", "assistant", "tool", "user", "ipython", "tool_results"}), Content: pick(genTexts)}
			switch {
			case m.Role == "tool" || m.Role == "tool_results":
				m.ToolCallID, m.Name = pick(genIDs), pick(genNames)
			case m.Role == "assistant" && r.IntN(2) == 0:
				m.ToolCalls = calls()
			}
			c.Messages = append(c.Messages, m)
		}
	}
	if r.IntN(2) == 0 {
		for range 1 + r.IntN(2) {
			c.Tools = append(c.Tools, json.RawMessage(pick(genTools)))
		}
	}
	if r.IntN(3) == 0 {
		think := r.IntN(2) == 0
		c.Think = &think
	}
	return c
}

// corpusJSON is a conversation as the corpus holds it, as npud hands it to
// GenAI: content always, the other fields when set, a call's arguments
// as the JSON value their text holds (a string when it holds none).
func corpusJSON(name string, c Conversation) map[string]any {
	var msgs []map[string]any
	for _, m := range c.Messages {
		msg := map[string]any{"role": m.Role, "content": m.Content}
		type function struct { // the keys in the corpus's order
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		type call struct {
			ID       string   `json:"id,omitempty"`
			Type     string   `json:"type"`
			Function function `json:"function"`
		}
		var calls []call
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Arguments)
			if !json.Valid(args) {
				args, _ = json.Marshal(tc.Arguments) // a string: always encodes
			}
			calls = append(calls, call{ID: tc.ID, Type: "function", Function: function{tc.Name, args}})
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		if m.ToolCallID != "" {
			msg["tool_call_id"] = m.ToolCallID
		}
		if m.Name != "" {
			msg["name"] = m.Name
		}
		msgs = append(msgs, msg)
	}
	out := map[string]any{"name": name, "messages": msgs, "add_generation_prompt": c.AddGenerationPrompt}
	if len(c.Tools) > 0 {
		out["tools"] = c.Tools
	}
	if c.Think != nil {
		out["think"] = *c.Think
	}
	return out
}

// generatedChecked are the templates checked on generated conversations.
var generatedChecked = map[string]bool{"llama3.1": true, "llama3.2": true, "mistral-v0.3": true, "mistral-nemo": true, "phi4-mini": true, "gemma3": true}

// Beyond the corpus: conversations generated from a fixed seed, rendered
// by the official GenAI wheel and by npud's renderers, are the same text
// (or refused alike, in the template's words).
func TestRenderersMatchGenAIOnGeneratedConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("renders through the official OpenVINO GenAI wheel: not with -short")
	}
	venv := os.Getenv("NPUD_OPENVINO_VENV")
	if venv == "" {
		t.Skip("NPUD_OPENVINO_VENV is not set: the checks against the official OpenVINO wheels run in make test")
	}
	r := rand.New(rand.NewPCG(39, 2026))
	convs := make([]Conversation, 300)
	var cases []map[string]any
	for i := range convs {
		convs[i] = generatedConversation(r)
		cases = append(cases, corpusJSON(fmt.Sprintf("generated_%d", i), convs[i]))
	}
	dir := t.TempDir()
	corpus, err := json.Marshal(map[string]any{"cases": cases})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corpus.json"), corpus, 0o600))
	out := filepath.Join(dir, "golden")
	cmd := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"),
		filepath.Join(templatesDir, "render_reference.py"), "../../testdata/openvino/tinymodel/model", out, filepath.Join(dir, "corpus.json"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())

	var sp specials
	readJSON(t, filepath.Join(templatesDir, "specials.json"), &sp)
	checked := 0
	for name, s := range sp {
		text, err := os.ReadFile(filepath.Join(templatesDir, name+".jinja"))
		require.NoError(t, err)
		tpl, err := RendererFor(string(text))
		if err != nil || !generatedChecked[tpl.Name] {
			continue
		}
		checked++
		t.Run(name, func(t *testing.T) {
			var g golden
			readJSON(t, filepath.Join(out, name+".json"), &g)
			require.Len(t, g.Cases, len(convs))
			var now time.Time
			if g.Today != "" {
				now, err = time.ParseInLocation(todayLayout, g.Today, time.Local)
				require.NoError(t, err)
			}
			refused := 0
			defer func() { t.Logf("%d conversations, %d refused", len(convs), refused) }()
			for i, c := range convs {
				c.Specials, c.Now = Specials{BOS: str(s.BOS), EOS: str(s.EOS), PAD: str(s.PAD)}, now
				got, err := tpl.Render(c)
				want := g.Cases[i]
				conv, _ := json.Marshal(cases[i])
				if want.Text == nil {
					refused++
					require.Error(t, err, "GenAI refuses %s: %s", conv, want.Error)
					var te *TemplateError
					if assert.ErrorAs(t, err, &te, "%s", conv) {
						assert.Equal(t, want.Error, te.Message, "%s", conv)
					}
					continue
				}
				require.NoError(t, err, "%s", conv)
				require.Equal(t, *want.Text, got, "%s", conv)
			}
		})
	}
	assert.Len(t, generatedChecked, checked)
}
