package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// Issue 40: /v1/rerank and /rerank on the simulated engine: its ranking,
// best first, cut to top_n, with the documents when asked and the engine's
// token count in usage, marked simulated; bad requests are 400s in
// OpenAI's error shape naming the parameter, before any engine work.
func TestRerankAPIOnTheSimulator(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	docs := []string{"alpha", "beta gamma", "delta", "epsilon zeta eta"}
	out, err := sim.New(sim.Config{}).Rerank(t.Context(), sim.ModelID, "the query", docs, false)
	require.NoError(t, err)
	want, tokens := out.Results, out.PromptTokens

	for _, tc := range []struct {
		path    string
		topN    int
		withDoc bool
	}{{"/v1/rerank", 0, false}, {"/rerank", 2, true}} {
		t.Run(tc.path, func(t *testing.T) {
			req := map[string]any{"model": sim.ModelID, "query": "the query", "documents": docs}
			n := len(docs)
			if tc.topN > 0 {
				req["top_n"], n = tc.topN, tc.topN
			}
			if tc.withDoc {
				req["return_documents"] = true
			}
			body, err := json.Marshal(req)
			require.NoError(t, err)
			resp, b := c.Do(t, "POST", tc.path, string(body))
			require.Equal(t, 200, resp.StatusCode, "%s", b)
			assert.Equal(t, "true", resp.Header.Get("X-Npud-Simulated"))
			var got struct {
				Results []struct {
					Index          int
					RelevanceScore float32 `json:"relevance_score"`
					Document       *struct{ Text string }
				}
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
					TotalTokens  int `json:"total_tokens"`
				}
			}
			require.NoError(t, json.Unmarshal(b, &got))
			require.Len(t, got.Results, n)
			for i, r := range got.Results {
				assert.Equal(t, want[i].Index, r.Index, "rank %d", i)
				assert.Equal(t, want[i].Score, r.RelevanceScore, "rank %d", i)
				if tc.withDoc {
					require.NotNil(t, r.Document)
					assert.Equal(t, docs[r.Index], r.Document.Text)
				} else {
					assert.Nil(t, r.Document)
				}
			}
			assert.Equal(t, tokens, got.Usage.PromptTokens)
			assert.Equal(t, tokens, got.Usage.TotalTokens)
			assert.Empty(t, resp.Header.Values("X-Npud-Truncated-Documents"), "no truncation asked for")
		})
	}
	t.Run("truncate asked for", func(t *testing.T) {
		resp, b := c.Do(t, "POST", "/v1/rerank", `{"model":"`+sim.ModelID+`","query":"q","documents":["a"],"truncate":true}`)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		assert.Equal(t, "0", resp.Header.Get("X-Npud-Truncated-Documents"), "the simulator's context is long")
	})

	tooMany, err := json.Marshal(map[string]any{"model": sim.ModelID, "query": "q", "documents": make([]string, npu.MaxRerankDocuments+1)})
	require.NoError(t, err)
	for _, tc := range []struct{ name, body, param string }{
		{"no model", `{"query":"q","documents":["a"]}`, "model"},
		{"no query", `{"model":"sim","documents":["a"]}`, "query"},
		{"an empty query", `{"model":"sim","query":"","documents":["a"]}`, "query"},
		{"no documents", `{"model":"sim","query":"q"}`, "documents"},
		{"documents not an array", `{"model":"sim","query":"q","documents":"a"}`, "documents"},
		{"too many documents", string(tooMany), "documents"},
		{"a document too large", `{"model":"sim","query":"q","documents":["` + strings.Repeat("x", 256<<10+1) + `"]}`, "documents"},
		{"a negative top_n", `{"model":"sim","query":"q","documents":["a"],"top_n":-1}`, "top_n"},
		{"truncate not a bool", `{"model":"sim","query":"q","documents":["a"],"truncate":"yes"}`, "truncate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := c.Do(t, "POST", "/v1/rerank", tc.body)
			require.Equal(t, 400, resp.StatusCode, "%s", b)
			var got struct {
				Error struct{ Type, Param, Message string }
			}
			require.NoError(t, json.Unmarshal(b, &got), "%s", b)
			assert.Equal(t, "invalid_request_error", got.Error.Type)
			assert.Equal(t, tc.param, got.Error.Param, "%s", b)
		})
	}
}
