//go:build cgo

package daemon

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/openvino/ovtestlib"
	"github.com/npud/npud/npu/sim"
)

// The worker engine describes itself with what the engine in its workers
// said it can do (the probe worker's answer), and its methods agree: the
// simulated engine in workers embeds and transcribes and reloads, the
// OpenVINO engine in workers loads, reloads, transcribes and embeds (its
// embedding models; a chat model's embedding is a bad request, not an
// unsupported one).
func TestWorkerEngineDescribesWhatItDoes(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	models := t.TempDir()
	require.NoError(t, os.MkdirAll(models+"/tiny", 0o755))
	require.NoError(t, os.WriteFile(models+"/tiny/openvino_model.xml", []byte("<net/>"), 0o644))
	require.NoError(t, os.WriteFile(models+"/tiny/tokenizer_config.json",
		[]byte(`{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}`), 0o644))
	t.Setenv("OVTEST_DEVICES", "CPU")
	for _, tc := range []struct{ engine, model string }{{"sim", sim.ModelID}, {"openvino", "tiny"}} {
		t.Run(tc.engine, func(t *testing.T) {
			cfg, err := ParseServe([]string{"--engine", tc.engine, "--isolation", "process", "--openvino-lib", lib,
				"--models-dir", models, "--device", "CPU", "--cache-dir", ""}, func(string) string { return "" }, io.Discard)
			require.NoError(t, err)
			engine, err := newWorkerEngine(cfg, tc.engine, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			t.Cleanup(engine.Close)
			require.True(t, engine.Describe().LoadsModels, "workers load models by starting")
			nputest.AssertFeatures(t, engine, tc.model)
		})
	}
}
