package openaiapi_test

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
)

// Issue 27: /v1/embeddings (OpenAI's shape) was a 404 while /api/embed
// worked. Through openai-go, in floats and in base64 (what the official
// SDKs ask for by default), with dimensions shortened to unit length.
func TestOpenAIGoEmbeddings(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's embedder")
	f := newSDKFixture(t, nil, nil)
	texts := []string{"the NPU", "streams tokens"}
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		t.Run(string(format), func(t *testing.T) {
			resp, err := f.client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
				Model: "sim", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}, EncodingFormat: format})
			require.NoError(t, err)
			assert.Equal(t, "list", string(resp.Object))
			assert.Equal(t, "sim", resp.Model)
			require.Len(t, resp.Data, 2)
			for i, d := range resp.Data {
				assert.EqualValues(t, i, d.Index)
				want := sim.Embedding(texts[i])
				got := d.Embedding
				if format == openai.EmbeddingNewParamsEncodingFormatBase64 {
					got = decodeBase64Floats(t, d.JSON.Embedding.Raw())
				}
				require.Len(t, got, len(want))
				for j := range want {
					assert.InDelta(t, want[j], got[j], 1e-6)
				}
			}
			assert.Positive(t, resp.Usage.PromptTokens)
			assert.Equal(t, resp.Usage.PromptTokens, resp.Usage.TotalTokens)
		})
	}
	t.Run("dimensions", func(t *testing.T) {
		resp, err := f.client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
			Model: "sim", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}, Dimensions: openai.Int(8)})
		require.NoError(t, err)
		require.Len(t, resp.Data, 1)
		require.Len(t, resp.Data[0].Embedding, 8)
		var sum float64
		for _, x := range resp.Data[0].Embedding {
			sum += x * x
		}
		assert.InDelta(t, 1, sum, 1e-5, "shortened to unit length")
	})
}

// decodeBase64Floats reads OpenAI's base64 embedding: little-endian float32s.
func decodeBase64Floats(t *testing.T, raw string) []float64 {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal([]byte(raw), &s))
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	require.Zero(t, len(b)%4)
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24))
	}
	return out
}

// TestEmbeddingsBadInput: /v1/embeddings refuses what it cannot do, with
// /api/embed's bounds, in OpenAI's error shape.
func TestEmbeddingsBadInput(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's embedder")
	f := newWireFixture(t, func(c *daemon.Config) { c.MaxEmbedInputs = 3 }, nil)
	many, _ := json.Marshal([]string{"a", "b", "c", "d"})
	for _, tc := range []struct {
		name, body  string
		status      int
		param, code string
	}{
		{"no input", `{"model":"sim"}`, 400, "input", "missing_required_parameter"},
		{"empty string", `{"model":"sim","input":""}`, 400, "input", "invalid_value"},
		{"empty array", `{"model":"sim","input":[]}`, 400, "input", "invalid_value"},
		{"token ids", `{"model":"sim","input":[1,2,3]}`, 400, "input", "unsupported_value"},
		{"lists of token ids", `{"model":"sim","input":[[1,2],[3]]}`, 400, "input", "unsupported_value"},
		{"a number", `{"model":"sim","input":5}`, 400, "input", "invalid_type"},
		{"over max-embed-inputs", `{"model":"sim","input":` + string(many) + `}`, 400, "input", "invalid_value"},
		{"unknown encoding", `{"model":"sim","input":"a","encoding_format":"hex"}`, 400, "encoding_format", "invalid_value"},
		{"dimensions 0", `{"model":"sim","input":"a","dimensions":0}`, 400, "dimensions", "invalid_value"},
		{"dimensions over the model's", `{"model":"sim","input":"a","dimensions":` + strconv.Itoa(sim.EmbeddingDims+1) + `}`, 400, "dimensions", "invalid_value"},
		{"no model", `{"input":"a"}`, 400, "model", "missing_required_parameter"},
		{"unknown model", `{"model":"gpt-9","input":"a"}`, 404, "model", "model_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, "/v1/embeddings", tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", raw)
			e := decodeError(t, raw)
			assert.Equal(t, tc.code, e.code())
			if assert.NotNil(t, e.Param) {
				assert.Equal(t, tc.param, *e.Param)
			}
		})
	}
	t.Run("GET", func(t *testing.T) {
		resp, _ := f.Do(t, http.MethodGet, "/v1/embeddings", "")
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "the route exists")
	})
	t.Run("simulated vectors say so", func(t *testing.T) {
		resp, raw := f.post(t, "/v1/embeddings", `{"model":"sim","input":"a"}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		assert.Equal(t, "true", resp.Header.Get("X-Npud-Simulated"))
		top := rawFields(t, raw)
		assert.Equal(t, `"list"`, string(top["object"]))
		assert.Contains(t, string(top["data"]), `"object":"embedding","index":0,"embedding":[`)
	})
}
