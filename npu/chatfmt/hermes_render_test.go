package chatfmt

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// conversationFromFuzz builds a conversation of up to eight messages from
// fuzzed text: shape picks each message's role (including roles no
// template knows), which assistants call tools, whether tools are
// declared, thinking and the generation prompt.
func conversationFromFuzz(content, args, tool string, shape uint32) Conversation {
	roles := []string{"user", "assistant", "tool", "system", "developer", ""}
	c := Conversation{AddGenerationPrompt: shape&1 != 0, Specials: Specials{BOS: "<bos>", EOS: "<eos>"}}
	if shape&2 != 0 {
		think := shape&4 != 0
		c.Think = &think
	}
	if shape&8 != 0 {
		c.Tools = []json.RawMessage{json.RawMessage(tool)}
	}
	n := int(shape>>4) % 9
	for i := range n {
		r := shape >> (8 + 3*uint(i%8))
		m := Message{Role: roles[int(r)%len(roles)], Content: content}
		if i%2 == 1 {
			m.Content = ""
		}
		if m.Role == "assistant" && r&4 != 0 {
			m.ToolCalls = []Call{{Name: "get_weather", Arguments: args}, {ID: "c2", Name: content, Arguments: "{}"}}
			m.ReasoningContent = content
		}
		if m.Role == "tool" {
			m.ToolCallID, m.Name = "c2", "get_weather"
		}
		c.Messages = append(c.Messages, m)
	}
	return c
}

// checkRenderer renders c twice: the same text or the same error each
// time, never a panic; a refusal is a TemplateError, any other error
// comes from JSON npud could not read (a tool, arguments).
func checkRenderer(t *testing.T, r Renderer, c Conversation) {
	t.Helper()
	first, err1 := r.Render(c)
	second, err2 := r.Render(c)
	require.Equal(t, first, second)
	require.Equal(t, err1, err2)
	var te *TemplateError
	if err1 != nil && !errors.As(err1, &te) {
		require.Condition(t, func() bool {
			return strings.Contains(err1.Error(), "tool") || strings.Contains(err1.Error(), "arguments") ||
				strings.Contains(err1.Error(), "tojson")
		}, err1.Error())
	}
	if err1 == nil && c.AddGenerationPrompt {
		require.NotEmpty(t, first)
	}
}

func addRenderSeeds(f *testing.F) {
	f.Add("Hello", `{"city": "Oslo"}`, `{"type": "function", "function": {"name": "f"}}`, uint32(0x0000_0021))
	f.Add("<think>\nhm\n</think>\n\nNo.", `{"a": [1, 2.5e7, {"b": null}]}`, `{}`, uint32(0x00e4_a95b))
	f.Add("<tool_response>x</tool_response>", `not json`, `[`, uint32(0xffff_fff9))
	f.Add("", `"a string"`, `{"p": {}}`, uint32(0x0124_9247))
}

// Qwen2.5's renderer never panics and renders the same conversation the
// same way, whatever the roles, contents and arguments.
func FuzzQwen25Render(f *testing.F) {
	addRenderSeeds(f)
	f.Fuzz(func(t *testing.T, content, args, tool string, shape uint32) {
		checkRenderer(t, qwen25Renderer{}, conversationFromFuzz(content, args, tool, shape))
	})
}

// Qwen3's renderer never panics and renders the same conversation the
// same way, whatever the roles, contents, reasoning and arguments.
func FuzzQwen3Render(f *testing.F) {
	addRenderSeeds(f)
	f.Fuzz(func(t *testing.T, content, args, tool string, shape uint32) {
		checkRenderer(t, qwen3Renderer{}, conversationFromFuzz(content, args, tool, shape))
	})
}

// DeepSeek-R1's renderer never panics and renders the same conversation
// the same way, whatever the roles, contents and arguments.
func FuzzDeepSeekR1Render(f *testing.F) {
	addRenderSeeds(f)
	f.Fuzz(func(t *testing.T, content, args, tool string, shape uint32) {
		checkRenderer(t, deepSeekR1Renderer{}, conversationFromFuzz(content, args, tool, shape))
	})
}
