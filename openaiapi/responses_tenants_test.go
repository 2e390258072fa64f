package openaiapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// Issue 38 item 2: stored responses were one pool for every tenant: one
// key storing many evicted another's, whose previous_response_id chain
// then failed. Each tenant now evicts only its own.
func TestStoredResponsesOfOneTenantSurviveAnother(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "alice", Key: "sk-alice-0123456789"}, {Name: "bob", Key: "sk-bob-0123456789ab"}}
		c.ResponsesMax, c.ResponsesMaxPerTenant = 4, 2
	}, nil)
	client := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	}
	alice, bob := client("sk-alice-0123456789"), client("sk-bob-0123456789ab")

	first, err := bob.Responses.New(sdkContext(t), responseParams("hi"))
	require.NoError(t, err)
	var alices []string
	for range 5 {
		r, err := alice.Responses.New(sdkContext(t), responseParams("hello"))
		require.NoError(t, err)
		alices = append(alices, r.ID)
	}

	params := responseParams("and then?")
	params.PreviousResponseID = openai.String(first.ID)
	_, err = bob.Responses.New(sdkContext(t), params)
	require.NoError(t, err, "bob's chain outlives alice's responses")
	_, err = alice.Responses.Get(sdkContext(t), alices[4], responses.ResponseGetParams{})
	require.NoError(t, err, "alice's newest is kept")
	_, err = alice.Responses.Get(sdkContext(t), alices[0], responses.ResponseGetParams{})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr, "alice's oldest went for her newest")
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
}

// Issue 38 item 2: input items were stored as sent, so unknown fields and
// a reasoning item's summary padded one stored response to the body
// limit. The store keeps what the conversation is made of: the padded
// request fits a 1 MiB store, and its input items list without the
// padding.
func TestStoredResponseKeepsNoPadding(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.ResponsesMaxBytes = 1 << 20 }, nil)
	pad := strings.Repeat("p", 7<<20)
	body, err := json.Marshal(map[string]any{"model": "sim", "input": []any{
		map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{map[string]any{"type": "summary_text", "text": pad}}},
		map[string]any{"type": "message", "role": "user", "content": "hi", "npud_padding": pad},
	}})
	require.NoError(t, err)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/responses", string(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%.300s", raw)
	var created struct {
		ID    string `json:"id"`
		Store bool   `json:"store"`
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	assert.True(t, created.Store, "stored, as asked")

	resp, raw = c.Do(t, http.MethodGet, "/v1/responses/"+created.ID+"/input_items?order=asc", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%.300s", raw)
	assert.Less(t, len(raw), 1024, "no padding kept")
	var items struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &items))
	require.Len(t, items.Data, 2, "%s", raw)
	assert.Equal(t, map[string]any{"type": "reasoning", "id": "rs_1"}, items.Data[0])
	assert.Equal(t, map[string]any{"type": "message", "role": "user", "content": "hi"}, items.Data[1])
}
