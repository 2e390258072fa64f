//go:build cgo

package daemon_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/openvino"
)

// envOpenVINOVenv names the pinned wheels' environment (make openvino-venv).
const envOpenVINOVenv = "NPUD_OPENVINO_VENV"

// officialEmbedEngine is the OpenVINO engine on the real core C library of
// the pinned wheel (no GenAI C library is in any wheel: embedding models
// need only the core and openvino-tokenizers), serving a models folder
// that holds the tiny embedding model as "tinyembed". It skips as the
// other official tests do.
func officialEmbedEngine(t *testing.T) (venv string, engine *openvino.Engine) {
	t.Helper()
	venv, lib := officialCore(t)
	models := t.TempDir()
	src := filepath.Join("..", "testdata", "openvino", "tinyembed", "model")
	require.NoError(t, os.CopyFS(filepath.Join(models, "tinyembed"), os.DirFS(src)))
	engine, err := openvino.New(openvino.Config{Library: lib, ModelsDir: models, Device: "CPU"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return venv, engine
}

// officialCore is the real core C library of the pinned wheel with its
// openvino-tokenizers, skipping as the other official tests do.
func officialCore(t testing.TB) (venv string, lib *openvino.Library) {
	t.Helper()
	if testing.Short() {
		t.Skip("the tests against the official OpenVINO runtime are integration tests: not with -short")
	}
	venv = os.Getenv(envOpenVINOVenv)
	if venv == "" {
		t.Skipf("%s is not set: the tests against the official OpenVINO wheels run in make test (make openvino-venv)", envOpenVINOVenv)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the wheels' layout is Linux's here")
	}
	lib, err := openvino.OpenCore(openvino.LibraryOptions{Getenv: func(k string) string {
		if k == "VIRTUAL_ENV" {
			return venv
		}
		return ""
	}})
	require.NoError(t, err)
	tokenizers, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", "openvino_tokenizers", "lib", "libopenvino_tokenizers.so"))
	require.Len(t, tokenizers, 1)
	lib.TokenizersFile = tokenizers[0]
	return venv, lib
}

// genaiVectors are the official TextEmbeddingPipeline's vectors of texts
// on the tiny embedding model (mean pooling, normalised, its 64
// positions), and the tokens its tokenizer gives them.
func genaiVectors(t *testing.T, venv string, texts []string) ([][]float64, int) {
	t.Helper()
	in, err := json.Marshal(map[string]any{"texts": texts, "pooling": "mean", "normalize": true, "max_length": 64})
	require.NoError(t, err)
	dir := filepath.Join("..", "testdata", "openvino", "tinyembed")
	cmd := exec.CommandContext(context.Background(), filepath.Join(venv, "bin", "python"), filepath.Join(dir, "genai_embed.py"), filepath.Join(dir, "model"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	var got struct {
		Vectors [][]float64
		Tokens  []int
	}
	require.NoError(t, json.Unmarshal(out, &got))
	total := 0
	for _, n := range got.Tokens {
		total += n
	}
	return got.Vectors, total
}

func assertVector(t *testing.T, want []float64, got []float64, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		assert.InDelta(t, want[i], got[i], 1e-5, "%s [%d]", msg, i)
	}
}

// Issue 40: an embedding model on the real OpenVINO core, through the
// daemon's APIs: listed with capabilities ["embedding"], its vectors at
// /v1/embeddings (floats, base64, shortened with `dimensions` and
// renormalised), /api/embed and /api/embeddings equal to
// TextEmbeddingPipeline's, with the real token counts in usage; a chat
// request for it is refused.
func TestOfficialEmbeddingsThroughTheAPIs(t *testing.T) {
	venv, engine := officialEmbedEngine(t)
	srv := daemontest.Start(t, daemontest.Defaults(t), engine)
	c := daemontest.NewClient(t, srv.URL)
	texts := []string{"hello world", "npud serves local language models.", strings.Repeat("tiny model ", 40)}
	want, tokens := genaiVectors(t, venv, texts)
	// The last text is past the model's 64 tokens: GenAI's pipeline cuts it,
	// and so does npud when the request allows it (truncate).
	body, err := json.Marshal(map[string]any{"model": "tinyembed", "input": texts, "truncate": true})
	require.NoError(t, err)

	t.Run("show", func(t *testing.T) {
		resp, b := c.Do(t, "POST", "/api/show", `{"model":"tinyembed"}`)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var show struct{ Capabilities []string }
		require.NoError(t, json.Unmarshal(b, &show))
		assert.Equal(t, []string{"embedding"}, show.Capabilities)
	})
	t.Run("openai refuses the long text without truncate", func(t *testing.T) {
		req, err := json.Marshal(map[string]any{"model": "tinyembed", "input": texts})
		require.NoError(t, err)
		resp, b := c.Do(t, "POST", "/v1/embeddings", string(req))
		require.Equal(t, 400, resp.StatusCode, "%s", b)
		var e struct {
			Error struct{ Message, Param string }
		}
		require.NoError(t, json.Unmarshal(b, &e))
		assert.Equal(t, "input", e.Error.Param)
		assert.Contains(t, e.Error.Message, "input 2 is")
		assert.Contains(t, e.Error.Message, "more than the model's 64")
	})
	t.Run("openai float", func(t *testing.T) {
		resp, b := c.Do(t, "POST", "/v1/embeddings", string(body))
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		assert.Equal(t, "1", resp.Header.Get("X-Npud-Truncated-Inputs"))
		var got struct {
			Data []struct {
				Index     int
				Embedding []float64
			}
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
		}
		require.NoError(t, json.Unmarshal(b, &got))
		require.Len(t, got.Data, len(texts))
		for i, d := range got.Data {
			assert.Equal(t, i, d.Index)
			assertVector(t, want[i], d.Embedding, texts[i])
		}
		assert.Equal(t, tokens, got.Usage.PromptTokens, "the tokens the model was given")
		assert.Equal(t, tokens, got.Usage.TotalTokens)
	})
	t.Run("openai base64 with dimensions", func(t *testing.T) {
		req, err := json.Marshal(map[string]any{"model": "tinyembed", "input": texts, "encoding_format": "base64", "dimensions": 8, "truncate": true})
		require.NoError(t, err)
		resp, b := c.Do(t, "POST", "/v1/embeddings", string(req))
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var got struct{ Data []struct{ Embedding string } }
		require.NoError(t, json.Unmarshal(b, &got))
		require.Len(t, got.Data, len(texts))
		for i, d := range got.Data {
			raw, err := base64.StdEncoding.DecodeString(d.Embedding)
			require.NoError(t, err)
			require.Len(t, raw, 8*4)
			vec := make([]float64, 8)
			for j := range vec {
				vec[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
			}
			short := append([]float64(nil), want[i][:8]...)
			var n float64
			for _, x := range short {
				n += x * x
			}
			for j := range short {
				short[j] /= math.Sqrt(n)
			}
			assertVector(t, short, vec, texts[i])
		}
	})
	t.Run("ollama embed", func(t *testing.T) {
		resp, b := c.Do(t, "POST", "/api/embed", string(body))
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var got struct {
			Embeddings      [][]float64
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		require.NoError(t, json.Unmarshal(b, &got))
		require.Len(t, got.Embeddings, len(texts))
		for i := range texts {
			assertVector(t, want[i], got.Embeddings[i], texts[i])
		}
		assert.Equal(t, tokens, got.PromptEvalCount)
	})
	t.Run("ollama embeddings", func(t *testing.T) {
		resp, b := c.Do(t, "POST", "/api/embeddings", `{"model":"tinyembed","prompt":"hello world"}`)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var got struct{ Embedding []float64 }
		require.NoError(t, json.Unmarshal(b, &got))
		assertVector(t, want[0], got.Embedding, texts[0])
	})
	t.Run("chat is refused", func(t *testing.T) {
		resp, b := c.Do(t, "POST", "/v1/chat/completions", `{"model":"tinyembed","messages":[{"role":"user","content":"hi"}]}`)
		assert.Equal(t, 400, resp.StatusCode, "%s", b)
		assert.Contains(t, string(b), "is an embedding model")
	})
}
