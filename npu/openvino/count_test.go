//go:build cgo

package openvino

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

// turnsRenderer renders a conversation as a template of role markers
// would: each message after its role, the assistant's turn opened at the
// end (or its last message continued).
type turnsRenderer struct{}

func (turnsRenderer) Render(c chatfmt.Conversation) (string, error) {
	var b strings.Builder
	for _, t := range c.Tools {
		b.WriteString("<tool> " + string(t) + "\n")
	}
	for i, m := range c.Messages {
		b.WriteString("<|" + m.Role + "|> " + m.Content)
		if i < len(c.Messages)-1 || c.AddGenerationPrompt {
			b.WriteString(" <|end|>\n")
		}
	}
	if c.AddGenerationPrompt {
		b.WriteString("<|assistant|> ")
	}
	return b.String(), nil
}

// wordCounter counts as the test library counts the prompts it prefills:
// a token a word (testdata/ovgenai: count_tokens), which the test core's
// tokenizer IR counts too.
type wordCounter struct{}

func (wordCounter) Count(_ context.Context, text string) (int, error) {
	return len(strings.Fields(text)), nil
}
func (wordCounter) Close() error { return nil }

// renderedByNPUD makes the loaded model's prompts npud's to render and
// count (the prompter a model whose template npud reproduces gets).
func renderedByNPUD(t *testing.T, e *Engine, model string) *pipeline {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pipelines[model]
	require.NotNil(t, p, "model %q is loaded", model)
	p.prompt = &prompter{template: chatfmt.Template{Name: "turns", Renderer: turnsRenderer{}}, counter: wordCounter{}}
	return p
}

// Issue 39 item 5: CountPrompt renders and counts a request as its
// generation does, so the count is the prompt GenAI prefilled (the test
// library's prompt_tokens): a plain prompt as one user message, a chat, an
// assistant's prefill continued. It needs no pipeline: it counts while a
// generation holds it.
func TestCountPromptIsThePrefilledPrompt(t *testing.T) {
	e, r := newTestEngine(t, "CPU", Config{Device: "CPU"})
	_, err := e.CountPrompt(t.Context(), &npu.Request{Model: "tiny", Prompt: "hi"})
	require.ErrorIs(t, err, npu.ErrModelNotFound, "not loaded")
	_, err = r.LoadModel(t.Context(), "tiny", nil)
	require.NoError(t, err)
	_, err = e.CountPrompt(t.Context(), &npu.Request{Model: "tiny", Prompt: "hi"})
	require.ErrorIs(t, err, npu.ErrPromptNotCounted, "GenAI renders the test model's template")

	p := renderedByNPUD(t, e, "tiny")
	for _, tc := range []struct {
		name string
		req  npu.Request
	}{
		{"a plain prompt", npu.Request{Prompt: "say hello to the bridge"}},
		{"a chat", npu.Request{Messages: []npu.Message{{Role: "system", Content: "be brief"},
			{Role: "user", Content: "what streams through the bridge?"}}}},
		{"an assistant's prefill", npu.Request{Messages: []npu.Message{{Role: "user", Content: "name a colour"},
			{Role: "assistant", Content: "the colour is"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Model, req.MaxTokens = "tiny", 3
			n, err := e.CountPrompt(t.Context(), &req)
			require.NoError(t, err)
			assert.Greater(t, n, 2, "the rendered prompt, markers and all")
			_, res, err := run(t, r, &req)
			require.NoError(t, err)
			assert.Equal(t, res.PromptTokens, n, "the count and what GenAI prefilled")
		})
	}

	require.True(t, p.busy.CompareAndSwap(false, true), "as a generation holds the pipeline")
	n, err := e.CountPrompt(t.Context(), &npu.Request{Model: "tiny", Prompt: "counted while it generates"})
	p.busy.Store(false)
	require.NoError(t, err)
	assert.Equal(t, len(strings.Fields("<|user|> counted while it generates <|end|> <|assistant|>")), n)
}

// closingCounter is a tokenizer a reload closes while it counts: its
// first count runs swap (the reload) and fails, as a closed tokenizer
// does.
type closingCounter struct {
	wordCounter
	swap func()
}

func (c *closingCounter) Count(ctx context.Context, text string) (int, error) {
	if c.swap != nil {
		swap := c.swap
		c.swap = nil
		swap()
		return 0, errors.New("the model's tokenizer is closed")
	}
	return c.wordCounter.Count(ctx, text)
}

// A reload swaps a new pipeline in while a count runs on the old one's
// tokenizer, which it closes: the count is made again on the new one.
func TestCountPromptAcrossAReload(t *testing.T) {
	e, r := newTestEngine(t, "CPU", Config{Device: "CPU"})
	_, err := r.LoadModel(t.Context(), "tiny", nil)
	require.NoError(t, err)
	old := renderedByNPUD(t, e, "tiny")
	reloaded := false
	old.prompt.counter = &closingCounter{swap: func() {
		require.NoError(t, e.Reload(t.Context(), "tiny"))
		renderedByNPUD(t, e, "tiny")
		reloaded = true
	}}
	n, err := e.CountPrompt(t.Context(), &npu.Request{Model: "tiny", Prompt: "counted across a reload"})
	require.NoError(t, err)
	assert.True(t, reloaded)
	assert.Equal(t, len(strings.Fields("<|user|> counted across a reload <|end|> <|assistant|>")), n)
}
