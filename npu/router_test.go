package npu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *fakeEngine) generations() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.gens)
}

// A request for a local model overflows to an upstream serving the same
// model only when its estimated wait passes the bound (or the queue is
// full); a model only the upstream serves always goes there.
func TestRunnerRouting(t *testing.T) {
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
			slow := []step{{delay: 80 * time.Millisecond, text: "local"}}
			local := &fakeEngine{script: slow}
			remote := &fakeEngine{script: texts("remote")}
			r := newTestRunner(t, local, RunnerConfig{MaxQueue: 4, Aliases: map[string]string{"alias": "m"}})
			up := newTestRunner(t, remote, RunnerConfig{MaxQueue: 4, Slots: 4})
			r.SetRouting(Routing{Upstreams: []Upstream{{Name: "far", Runner: up}}, OverflowAfter: tc.overflowAfter})

			req := func() *Request { return &Request{Model: "m", Prompt: "x"} }
			text, _, err := drain(t, start(t, r, req())) // idle: local, and the mean generation time is known
			require.NoError(t, err)
			assert.Equal(t, "local", text)
			busy := start(t, r, req()) // the engine is busy for ~80 ms
			require.Eventually(t, func() bool { return local.generations() == 2 }, 5*time.Second, time.Millisecond)
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
	}
}

func TestRunnerRoutesModelsOnlyAnUpstreamServes(t *testing.T) {
	remote := &fakeEngine{script: texts("remote")}
	r := newTestRunner(t, &fakeEngine{script: texts("local")}, RunnerConfig{MaxQueue: 4})
	healthy := true
	up := newTestRunner(t, &aliasEngine{fakeEngine: remote, id: "big"}, RunnerConfig{MaxQueue: 4})
	r.SetRouting(Routing{Upstreams: []Upstream{{Name: "far", Runner: up, Healthy: func() bool { return healthy }}}})

	m, err := r.Model("big")
	require.NoError(t, err)
	assert.Equal(t, "big", m.ID)
	ids := []string{}
	for _, m := range r.Models() {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, []string{"m", "big"}, ids)
	text, _, err := drain(t, start(t, r, &Request{Model: "big", Prompt: "x"}))
	require.NoError(t, err)
	assert.Equal(t, "remote", text)

	healthy = false
	_, err = r.Start(&Request{Model: "big", Prompt: "x"})
	assert.ErrorIs(t, err, ErrUpstreamUnavailable)
	_, err = r.Start(&Request{Model: "nothing", Prompt: "x"})
	assert.ErrorIs(t, err, ErrModelNotFound)
}

// aliasEngine serves its fake engine's script under another model name.
type aliasEngine struct {
	*fakeEngine
	id string
}

func (e *aliasEngine) Models() []ModelInfo { return []ModelInfo{{ID: e.id, ContextLength: 1000}} }
