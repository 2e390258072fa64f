package chatfmt

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fuzzConversation is a conversation made of fuzzed parts: shape picks
// each message's role (and an assistant's number of calls), a and b are
// the texts (contents, call names and ids, arguments), tool is a tool's
// JSON text, declared beside a valid one.
func fuzzConversation(shape []byte, a, b, tool string) Conversation {
	c := Conversation{
		AddGenerationPrompt: len(shape)%2 == 0,
		Specials:            Specials{BOS: "<s>", EOS: "</s>"},
		Now:                 time.Date(2026, time.November, 28, 12, 0, 0, 0, time.UTC),
	}
	if len(shape) > 16 {
		shape = shape[:16]
	}
	texts := []string{a, b}
	for i, s := range shape {
		text := texts[i%2]
		m := Message{Content: text}
		switch s % 6 {
		case 0:
			m.Role = "system"
		case 1, 5:
			m.Role = "user"
		case 2:
			m.Role = "assistant"
		case 3:
			m.Role = "tool"
			m.ToolCallID, m.Name = texts[(i+1)%2], text
		case 4:
			m.Role = "assistant"
			for n := range int(s/6)%3 + 1 {
				m.ToolCalls = append(m.ToolCalls, Call{ID: texts[(i+n)%2], Name: text, Arguments: texts[(i+n+1)%2]})
			}
		}
		c.Messages = append(c.Messages, m)
	}
	if tool != "" {
		c.Tools = []json.RawMessage{
			json.RawMessage(`{"type": "function", "function": {"name": "get_time", "description": "The time.", "parameters": {"type": "object", "properties": {}}}}`),
			json.RawMessage(tool),
		}
	}
	if len(shape) > 0 && shape[0]&0x80 != 0 {
		think := shape[0]&0x40 != 0
		c.Think = &think
	}
	return c
}

// fuzzRenderers checks what every renderer must do with any conversation:
// not panic, and render it (or refuse it) the same way twice.
func fuzzRenderers(f *testing.F, templates []Template) {
	f.Add([]byte{1}, "Say hello", "", "")
	f.Add([]byte{0, 1, 2, 1}, "You are terse.", "Hello", "")
	f.Add([]byte{1, 4, 3, 2, 1}, "a1B2c3D4e", `{"city": "Oslo"}`, `{"type": "function", "function": {"name": "get_weather", "parameters": {}}}`)
	f.Add([]byte{1, 10, 3, 3, 2}, "call_1", `{"a": [1, 2.5, {}], "b": null}`, `{"function": {"return": 1, "name": "x"}}`)
	f.Add([]byte{0x80, 5, 16, 3}, " \t spaced \n", "{\"unterminated", "[]")
	f.Add([]byte{2, 2, 0, 3, 4}, "日本 🙂 \x00\x1f", `"a string"`, `{"type": "function"}`)
	f.Fuzz(func(t *testing.T, shape []byte, a, b, tool string) {
		if len(a)+len(b)+len(tool) > 4096 {
			return
		}
		c := fuzzConversation(shape, a, b, tool)
		for _, tpl := range templates {
			first, err1 := tpl.Render(c)
			again, err2 := tpl.Render(c)
			require.Equal(t, first, again, tpl.Name)
			require.Equal(t, err1, err2, tpl.Name)
		}
	})
}

func FuzzLlama3Render(f *testing.F) { fuzzRenderers(f, Llama3{}.Templates()) }

func FuzzMistralRender(f *testing.F) { fuzzRenderers(f, Mistral{}.Templates()) }

func FuzzPhi4MiniRender(f *testing.F) { fuzzRenderers(f, Phi4Mini{}.Templates()) }

func FuzzGemma3Render(f *testing.F) { fuzzRenderers(f, Gemma3{}.Templates()) }
