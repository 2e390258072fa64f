//go:build cgo

package openvino

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// Issue 11, defect 2: deleting a model while it generates freed its native
// pipeline under the generation. The lifecycle owns residency now: the
// delete waits for the engine slot, unloads, then removes the files.
func TestDeleteWaitsForTheGenerationItRemoves(t *testing.T) {
	t.Setenv("OVTEST_TOKEN_DELAY_US", "15000")
	_, r := newTestEngine(t, "CPU", Config{Device: "CPU"})
	s, err := r.Start(&npu.Request{Model: "tiny", Prompt: "a long story"})
	require.NoError(t, err)
	defer s.Close()

	type outcome struct {
		text string
		res  npu.Result
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a, err := npu.CollectAnswer(ctx, s.Next)
		done <- outcome{a.Text, a.Result, err}
	}()
	time.Sleep(60 * time.Millisecond) // the generation is under way

	require.NoError(t, r.Delete(context.Background(), "tiny"))
	assert.Zero(t, r.Running(), "the delete returned before the generation it unloaded had finished")
	got := <-done
	require.NoError(t, got.err)
	assert.Equal(t, npu.FinishStop, got.res.FinishReason, "the generation ran to its end")
	assert.NotEmpty(t, got.text)
	assert.Empty(t, r.Loaded(), "the lifecycle unloaded the model")
	_, err = r.Model("tiny")
	assert.ErrorIs(t, err, npu.ErrModelNotFound)
}

// Issue 11, defect 2: the model list is replaced by every copy, pull and
// delete; reading it raced with that (go test -race reports it).
func TestModelsWhileTheFolderChanges(t *testing.T) {
	e, r := newTestEngine(t, "CPU", Config{Device: "CPU"})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_ = e.Models()
		}
	}()
	for i := range 5 {
		name := fmt.Sprintf("copy-%d", i)
		require.NoError(t, r.Copy(context.Background(), "tiny", name))
		require.NoError(t, r.Delete(context.Background(), name))
	}
	cancel()
	wg.Wait()
}

// Issue 11, defect 2: a keep-alive that ran out during /admin/reload
// unloaded the old pipeline, then the reload installed the new one that
// nobody listed or unloaded (and freed the old one a second time).
func TestKeepAliveExpiryDuringReloadLeavesNoOrphan(t *testing.T) {
	t.Setenv("OVTEST_COMPILE_DELAY_US", "300000")
	dir := modelsDir(t, "tiny")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tiny", "slow_compile"), nil, 0o644))
	e, r := newTestEngine(t, "CPU", Config{Device: "CPU", ModelsDir: dir})

	keep := 100 * time.Millisecond
	_, err := r.LoadModel(context.Background(), "tiny", &keep)
	require.NoError(t, err)
	_, err = r.ReloadModel(context.Background(), "tiny") // compiles for 300 ms
	require.NoError(t, err)

	// Whatever the lifecycle says is loaded is what the engine holds.
	require.Eventually(t, func() bool { return len(r.Loaded()) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the keep-alive held back by the reload unloads the model afterwards")
	assert.Empty(t, e.DeviceOf("tiny"), "no compiled pipeline is left that the lifecycle does not list")
}
