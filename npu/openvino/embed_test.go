//go:build cgo

package openvino

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// Issue 40: on the test library's core, an embedding model folder loads
// through the pool's lifecycle and embeds with its own tokenizer, pooled
// and normalised as its files say, truncated at its length, with the
// tokens the model was given; a chat model embeds nothing, and an
// embedding model takes no prompts.
func TestEmbeddingModelOnTheTestLibrary(t *testing.T) {
	dir := modelsDir(t, "tiny")
	ovtestlib.WriteEmbeddingModel(t, dir, "embed", 6)
	e, r := newTestEngine(t, "CPU", Config{Device: "CPU", ModelsDir: dir})
	require.True(t, e.Describe().Embeds, "the test core has what embeddings need")

	var embed npu.ModelInfo
	for _, m := range e.Models() {
		if m.ID == "embed" {
			embed = m
		}
	}
	assert.Equal(t, []string{"embedding"}, npu.Capabilities(embed))

	texts := []string{"the NPU", "streams tokens to every client", "one two three four five six seven eight"}
	_, err := r.Embed(context.Background(), npu.EmbedRequest{Model: "embed", Inputs: texts})
	var invalid *npu.InvalidRequestError
	require.ErrorAs(t, err, &invalid, "past the model's length, without truncate")
	assert.Equal(t, "input", invalid.Param)
	assert.Equal(t, "input 2 is 8 tokens, more than the model's 6 (allow truncation to cut it)", invalid.Message)

	embedded, err := r.Embed(context.Background(), npu.EmbedRequest{Model: "embed", Inputs: texts, Truncate: true})
	require.NoError(t, err)
	vectors, tokens := embedded.Vectors, embedded.PromptTokens
	require.Len(t, vectors, len(texts))
	for i, text := range texts {
		assert.InDeltaSlice(t, ovtestlib.Embedding(text, 6), vectors[i], 1e-6, "input %d", i)
	}
	assert.Equal(t, 2+5+6, tokens, "the last text is cut at the model's 6 positions")
	assert.Equal(t, 1, embedded.Truncated)
	assert.Equal(t, "CPU", e.DeviceOf("embed"))

	// More texts than one inference takes (maxEmbedBatch): several, in order.
	many := make([]string, 3*maxEmbedBatch+5)
	for i := range many {
		many[i] = strings.Repeat("word ", 1+i%7) + strconv.Itoa(i)
	}
	embedded, err = r.Embed(context.Background(), npu.EmbedRequest{Model: "embed", Inputs: many, Truncate: true})
	require.NoError(t, err)
	vectors = embedded.Vectors
	require.Len(t, vectors, len(many))
	for i, text := range many {
		assert.InDeltaSlice(t, ovtestlib.Embedding(text, 6), vectors[i], 1e-6, "input %d", i)
	}

	_, err = r.Embed(context.Background(), npu.EmbedRequest{Model: "embed", Inputs: []string{"a", "  "}})
	require.ErrorAs(t, err, &invalid, "a text of no tokens")
	assert.Equal(t, "input", invalid.Param)

	_, err = r.Embed(context.Background(), npu.EmbedRequest{Model: "tiny", Inputs: []string{"a"}})
	require.ErrorAs(t, err, &invalid, "a chat model")
	assert.Contains(t, invalid.Message, "not an embedding model")

	_, err = r.Start(&npu.Request{Model: "embed", Prompt: "hello", MaxTokens: 4})
	require.ErrorAs(t, err, &invalid)
	assert.Contains(t, invalid.Message, "is an embedding model")
}
