package serve

import (
	"cmp"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// countingEngine counts prompts (ten tokens a message, for the test) of
// its one model (id, else "m"), which it loads, and records what it was
// asked.
type countingEngine struct {
	fakeEngine
	features npu.Features
	id       string

	mu     sync.Mutex
	loads  int
	counts []npu.Request
}

func (e *countingEngine) Describe() npu.Features { return e.features }

func (e *countingEngine) Models() []npu.ModelInfo {
	m := e.fakeEngine.Models()
	m[0].ID = cmp.Or(e.id, m[0].ID)
	return m
}

func (e *countingEngine) Load(context.Context, string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loads++
	return nil
}

func (e *countingEngine) Unload(string) error { return nil }

func (e *countingEngine) CountPrompt(_ context.Context, req *npu.Request) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts = append(e.counts, *req)
	return 10 * len(req.Messages), nil
}

func (e *countingEngine) asked() (loads int, counts []npu.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.loads, e.counts
}

// Issue 39 item 5: Router.CountPrompt resolves the model as a generation
// does (an alias, its checks, the tools the choice leaves) and counts on
// the model loaded through the lifecycle; what the local engine does not
// count answers ErrPromptNotCounted before anything is loaded.
func TestRouterCountPrompt(t *testing.T) {
	counts := npu.Features{LoadsModels: true, ExactCounts: true}
	chat := []npu.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}, {Role: "user", Content: "more"}}
	tools := []npu.Tool{{Name: "f"}}
	for _, tc := range []struct {
		name     string
		features npu.Features
		details  npu.ModelDetails
		req      npu.Request
		want     int
		err      error
		loads    int
		tools    int // the tools the engine was asked to count
	}{
		{name: "counted", features: counts, req: npu.Request{Model: "m", Messages: chat}, want: 30, loads: 1},
		{name: "by an alias", features: counts, req: npu.Request{Model: "alias", Messages: chat}, want: 30, loads: 1},
		{name: "tools the choice hides", features: counts, details: npu.ModelDetails{ToolFormat: "hermes"},
			req: npu.Request{Model: "m", Messages: chat, Tools: tools, ToolChoice: npu.ToolChoice{Mode: npu.ToolChoiceNone}}, want: 30, loads: 1},
		{name: "tools counted", features: counts, details: npu.ModelDetails{ToolFormat: "hermes"},
			req: npu.Request{Model: "m", Messages: chat, Tools: tools}, want: 30, loads: 1, tools: 1},
		{name: "tools the model does not take", features: counts, req: npu.Request{Model: "m", Messages: chat, Tools: tools},
			err: npu.ErrInvalidRequest},
		{name: "GenAI renders its prompts", features: counts, details: npu.ModelDetails{PromptRenderer: npu.GenAIRenders},
			req: npu.Request{Model: "m", Messages: chat}, err: npu.ErrPromptNotCounted},
		{name: "an engine that counts nothing", features: npu.Features{LoadsModels: true},
			req: npu.Request{Model: "m", Messages: chat}, err: npu.ErrPromptNotCounted},
		{name: "an upstream's model", features: counts, req: npu.Request{Model: "big", Messages: chat}, err: npu.ErrPromptNotCounted},
		{name: "no such model", features: counts, req: npu.Request{Model: "nope", Messages: chat}, err: npu.ErrModelNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &countingEngine{fakeEngine: fakeEngine{details: tc.details}, features: tc.features}
			remote := &countingEngine{features: counts, id: "big"} // it could count: the router does not ask it
			r := newTestRouterWith(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour}, RouterConfig{
				Aliases:   map[string]string{"alias": "m"},
				Upstreams: []Upstream{{Name: "far", Pool: newTestPool(remote, PoolConfig{MaxQueue: 4})}}})
			req := tc.req
			n, err := r.CountPrompt(t.Context(), &req)
			loads, asked := e.asked()
			remoteLoads, remoteAsked := remote.asked()
			assert.Zero(t, remoteLoads, "the upstream's model is not loaded")
			assert.Empty(t, remoteAsked, "the upstream is not asked")
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Empty(t, asked, "the engine was not asked")
				assert.Zero(t, loads, "nothing was loaded to say so")
				assert.Empty(t, r.Loaded())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
			assert.Equal(t, tc.loads, loads)
			require.Len(t, asked, 1)
			assert.Equal(t, "m", asked[0].Model, "the model the engine knows")
			assert.Len(t, asked[0].Tools, tc.tools)
			loaded := r.Loaded()
			require.Len(t, loaded, 1, "loaded through the lifecycle")
			assert.Zero(t, loaded[0].InUse, "and released: its keep-alive runs")
		})
	}
}

// A count is work of its tenant (its stream cap) and is refused while the
// router drains.
func TestRouterCountPromptIsAdmitted(t *testing.T) {
	gate := make(chan struct{})
	e := &countingEngine{fakeEngine: fakeEngine{script: []step{{gate: gate, text: "x"}}}, features: npu.Features{ExactCounts: true}}
	r := newTestRouterWith(t, e, PoolConfig{MaxQueue: 4}, RouterConfig{Limits: Limits{StreamCap: 1}})
	s, err := r.Start(&npu.Request{Model: "m", Tenant: "alice", Prompt: "x"})
	require.NoError(t, err)
	_, err = r.CountPrompt(t.Context(), &npu.Request{Model: "m", Tenant: "alice", Prompt: "x"})
	require.ErrorIs(t, err, npu.ErrTooManyStreams)
	n, err := r.CountPrompt(t.Context(), &npu.Request{Model: "m", Tenant: "bob", Prompt: "x"})
	require.NoError(t, err, "another tenant's count, while alice's generation holds the engine's one slot")
	assert.Zero(t, n)
	close(gate)
	_, err = npu.CollectAnswer(t.Context(), s.Next)
	require.NoError(t, err)
	s.Close()

	r.StopAccepting()
	_, err = r.CountPrompt(t.Context(), &npu.Request{Model: "m", Tenant: "bob", Prompt: "x"})
	require.ErrorIs(t, err, npu.ErrShuttingDown)
}
