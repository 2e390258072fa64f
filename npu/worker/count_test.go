package worker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// countingEngines are the test workers' engines whose CountPrompt is not
// the simulator's, by mode: one that does not count (GenAI renders the
// model's prompts), one that dies counting, one that never answers.
var countingEngines = map[string]func() npu.Engine{
	"count-refuses": func() npu.Engine { return refusesCounts{sim.New(sim.Config{})} },
	"count-dies":    func() npu.Engine { return diesCounting{sim.New(sim.Config{})} },
	"count-hangs":   func() npu.Engine { return hangsCounting{sim.New(sim.Config{})} },
}

type refusesCounts struct{ *sim.Engine }

func (refusesCounts) CountPrompt(_ context.Context, req *npu.Request) (int, error) {
	return 0, fmt.Errorf("model %q: GenAI renders its prompts: %w", req.Model, npu.ErrPromptNotCounted)
}

type diesCounting struct{ *sim.Engine }

func (diesCounting) CountPrompt(context.Context, *npu.Request) (int, error) {
	os.Exit(3) // as a tokenizer that aborts
	return 0, nil
}

type hangsCounting struct{ *sim.Engine }

func (hangsCounting) CountPrompt(context.Context, *npu.Request) (int, error) {
	select {} // killed by the test
}

// Issue 39 item 5: a count crosses to the model's worker as a job and its
// answer comes back: the worker's engine's count of the same request (the
// request crosses whole: tools, thinking off, calls); a model whose
// prompts the worker's engine does not count says so across the boundary.
func TestCountsCrossToTheWorker(t *testing.T) {
	off := false
	requests := []npu.Request{
		{Model: sim.ModelID, Prompt: "count this plain prompt"},
		{Model: sim.ModelID, Think: &off, Tools: []npu.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object"}`)}},
			Messages: []npu.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "weather in Zürich?"},
				{Role: "assistant", ToolCalls: []npu.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Zürich"}`}}},
				{Role: "tool", ToolCallID: "c1", Content: "sunny"}}},
	}
	e, err := engineOfTestWorkers(t, "sim")
	require.NoError(t, err)
	defer e.Close()
	assert.True(t, e.Describe().ExactCounts, "the probe worker's engine counts")
	require.NoError(t, e.Load(t.Context(), sim.ModelID))
	for i, req := range requests {
		want, err := sim.New(sim.Config{}).CountPrompt(t.Context(), &req)
		require.NoError(t, err)
		got, err := e.CountPrompt(t.Context(), &req)
		require.NoError(t, err)
		assert.Equal(t, want, got, "request %d", i)
	}

	refusing, err := engineOfTestWorkers(t, "count-refuses")
	require.NoError(t, err)
	defer refusing.Close()
	require.NoError(t, refusing.Load(t.Context(), sim.ModelID))
	_, err = refusing.CountPrompt(t.Context(), &requests[0])
	require.ErrorIs(t, err, npu.ErrPromptNotCounted)
	assert.Equal(t, "prompt_not_counted", npu.ErrorCode(err), "its own class crossed")
	assert.Contains(t, err.Error(), "GenAI renders its prompts")
	assert.Zero(t, refusing.Restarts(), "a refusal is no fault")
}

// A worker that dies counting ends the count with engine_crashed and loses
// the model, as a generation's fault does; a count whose context ends
// stops waiting for a worker that does not answer.
func TestCountFaultsAndDeadlines(t *testing.T) {
	req := &npu.Request{Model: sim.ModelID, Prompt: "count me"}

	dies, err := engineOfTestWorkers(t, "count-dies")
	require.NoError(t, err)
	defer dies.Close()
	require.NoError(t, dies.Load(t.Context(), sim.ModelID))
	_, err = dies.CountPrompt(t.Context(), req)
	require.ErrorIs(t, err, npu.ErrEngineCrashed)
	require.ErrorIs(t, err, npu.ErrModelLost)
	assert.Equal(t, "engine_crashed", npu.ErrorCode(err))
	assert.Contains(t, err.Error(), "exit status 3")
	assert.Equal(t, 1, dies.ModelRestarts(sim.ModelID))
	_, err = dies.CountPrompt(t.Context(), req)
	assert.Equal(t, "model_lost", npu.ErrorCode(err), "the model went with its worker: %v", err)

	hangs, err := engineOfTestWorkers(t, "count-hangs")
	require.NoError(t, err)
	defer hangs.Close()
	require.NoError(t, hangs.Load(t.Context(), sim.ModelID))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = hangs.CountPrompt(ctx, req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	p, err := hangs.running(sim.ModelID)
	require.NoError(t, err)
	p.kill() // its count never ends: Close would wait for it
	<-p.exited
}
