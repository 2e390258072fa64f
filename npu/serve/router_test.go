package serve

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

func (e *fakeEngine) generations() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.gens)
}

// A request for a local model overflows to an upstream serving the same
// model only when its estimated wait passes the bound (or the queue is
// full); a model only the upstream serves always goes there.
func TestRouterRouting(t *testing.T) {
	for _, tc := range []struct {
		name          string
		overflowAfter time.Duration
		wantUpstream  int
	}{
		{"the wait is longer than the bound: overflow", 10 * time.Millisecond, 1},
		{"the wait is shorter than the bound: it queues here", time.Minute, 0},
		{"no bound: never", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := []step{{delay: 80 * time.Millisecond, text: "local"}} // on the bubble's clock
				local := &fakeEngine{script: slow}
				remote := &fakeEngine{script: texts("remote")}
				up := newTestPool(remote, PoolConfig{MaxQueue: 4, Slots: 4})
				r := newTestRouterWith(t, local, PoolConfig{MaxQueue: 4}, RouterConfig{Aliases: map[string]string{"alias": "m"},
					Upstreams: []Upstream{{Name: "far", Pool: up}}, OverflowAfter: tc.overflowAfter})

				req := func() *npu.Request { return &npu.Request{Model: "m", Prompt: "x"} }
				text, _, err := drain(t, start(t, r, req())) // idle: local, and the mean generation time is known
				require.NoError(t, err)
				assert.Equal(t, "local", text)
				busy := start(t, r, req()) // the engine is busy for 80 ms
				synctest.Wait()
				require.Equal(t, 2, local.generations(), "the second generation runs")
				third := start(t, r, req())
				text, _, err = drain(t, third)
				require.NoError(t, err)
				assert.Equal(t, remote.generations(), tc.wantUpstream)
				if tc.wantUpstream == 1 {
					assert.Equal(t, "remote", text)
				} else {
					assert.Equal(t, "local", text)
				}
				_, _, _ = drain(t, busy)
			})
		})
	}
}

func TestRouterRoutesModelsOnlyAnUpstreamServes(t *testing.T) {
	remote := &fakeEngine{script: texts("remote")}
	healthy := true
	up := newTestPool(&aliasEngine{fakeEngine: remote, id: "big"}, PoolConfig{MaxQueue: 4})
	r := newTestRouterWith(t, &fakeEngine{script: texts("local")}, PoolConfig{MaxQueue: 4},
		RouterConfig{Upstreams: []Upstream{{Name: "far", Pool: up, Healthy: func() bool { return healthy }}}})

	m, err := r.Model("big")
	require.NoError(t, err)
	assert.Equal(t, "big", m.ID)
	ids := []string{}
	for _, m := range r.Models() {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, []string{"m", "big"}, ids)
	text, _, err := drain(t, start(t, r, &npu.Request{Model: "big", Prompt: "x"}))
	require.NoError(t, err)
	assert.Equal(t, "remote", text)

	healthy = false
	_, err = r.Start(&npu.Request{Model: "big", Prompt: "x"})
	assert.ErrorIs(t, err, npu.ErrUpstreamUnavailable)
	_, err = r.Start(&npu.Request{Model: "nothing", Prompt: "x"})
	assert.ErrorIs(t, err, npu.ErrModelNotFound)
}

// aliasEngine serves its fake engine's script under another model name.
type aliasEngine struct {
	*fakeEngine
	id string
}

func (e *aliasEngine) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: e.id, ContextLength: 1000}}
}

// workEngine generates, embeds and transcribes; an embedding or a
// transcription says it entered and waits for release.
type workEngine struct {
	transcribingEngine
}

func (e *workEngine) Describe() npu.Features { return npu.Features{Transcribes: true, Embeds: true} }

func (e *workEngine) Embed(ctx context.Context, _ string, inputs []string, _ bool) (npu.Embedded, error) {
	e.entered <- struct{}{}
	select {
	case <-e.release:
	case <-ctx.Done():
		return npu.Embedded{}, ctx.Err()
	}
	return npu.Embedded{Vectors: make([][]float32, len(inputs)), PromptTokens: len(inputs)}, nil
}

// refusals records the tenants the router refused.
type refusals struct {
	noObserver
	mu      sync.Mutex
	tenants []string
}

func (o *refusals) Refused(tenant string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if errors.Is(err, npu.ErrTooManyStreams) {
		o.tenants = append(o.tenants, tenant)
	}
}

func (o *refusals) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.tenants...)
}

// Issue 28: the stream cap is admitted in one place, the router, for every
// kind of work on every engine: a tenant's generation on an upstream, its
// embedding or its transcription on the local engine each take its one
// stream, while another tenant's work goes on.
func TestRouterAdmitsEveryKindOfWorkOnEveryEngine(t *testing.T) {
	gate := make(chan struct{})
	remote := &aliasEngine{fakeEngine: &fakeEngine{script: []step{{gate: gate, text: "far"}}}, id: "big"}
	local := &workEngine{transcribingEngine{fakeEngine: fakeEngine{script: texts("near"), details: npu.ModelDetails{Speech: true}},
		entered: make(chan struct{}, 4), release: make(chan struct{}, 4)}}
	obs := &refusals{}
	r := newTestRouterWith(t, local, PoolConfig{MaxQueue: 4, Slots: 2}, RouterConfig{Limits: Limits{StreamCap: 1}, Observer: obs,
		Upstreams: []Upstream{{Name: "far", Pool: newTestPool(remote, PoolConfig{MaxQueue: 4})}}})
	ctx := t.Context()
	chat := func(tenant, model string) (npu.Stream, error) {
		return r.Start(&npu.Request{Model: model, Tenant: tenant, Messages: []npu.Message{{Role: "user", Content: "x"}}})
	}
	embed := func(tenant string) error {
		_, err := r.Embed(ctx, npu.EmbedRequest{Model: "m", Inputs: []string{"x"}, Tenant: tenant})
		return err
	}
	transcribe := func(tenant string) error {
		_, err := r.Transcribe(ctx, &npu.TranscribeRequest{Model: "m", Samples: make([]float32, npu.AudioSampleRate), Tenant: tenant})
		return err
	}
	refusedAll := func(why string) {
		t.Helper()
		_, err := chat("alice", "m")
		require.ErrorIs(t, err, npu.ErrTooManyStreams, "a local generation while %s", why)
		_, err = chat("alice", "big")
		require.ErrorIs(t, err, npu.ErrTooManyStreams, "an upstream generation while %s", why)
		require.ErrorIs(t, embed("alice"), npu.ErrTooManyStreams, "an embedding while %s", why)
		require.ErrorIs(t, transcribe("alice"), npu.ErrTooManyStreams, "a transcription while %s", why)
	}

	far, err := chat("alice", "big")
	require.NoError(t, err)
	refusedAll("a generation runs on the upstream")
	near, err := chat("bob", "m")
	require.NoError(t, err, "another tenant's work goes on")
	text, _, err := drain(t, near)
	require.NoError(t, err)
	assert.Equal(t, "near", text)
	close(gate)
	text, _, err = drain(t, far)
	require.NoError(t, err)
	assert.Equal(t, "far", text)

	for _, work := range []struct {
		name string
		run  func(string) error
	}{{"an embedding runs", embed}, {"a transcription runs", transcribe}} {
		done := make(chan error, 1)
		go func() { done <- work.run("alice") }()
		select { // a refusal ends the work before it enters: fail, not hang
		case <-local.entered:
		case err := <-done:
			require.FailNow(t, "the work did not reach the engine", "%s: %v", work.name, err)
		}
		refusedAll(work.name)
		local.release <- struct{}{}
		require.NoError(t, <-done)
	}
	assert.Len(t, obs.list(), 12, "each refusal is observed once")
	local.release <- struct{}{}
	require.NoError(t, embed("alice"), "the stream is free again")
	<-local.entered
}
