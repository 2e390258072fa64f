package daemon

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 38.3: the NPU properties the operator set, in any layer and even
// to npud's default value, are the ones a model folder's
// npud-properties.json may not override; those left at npud's defaults it
// may.
func TestNPUOperatorSetIsWhatTheOperatorSet(t *testing.T) {
	file := filepath.Join(t.TempDir(), "npud.toml")
	require.NoError(t, os.WriteFile(file, []byte("npu-generate-hint = \"BEST_PERF\"\n"), 0o600))
	cases := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"nothing set", nil, nil, nil},
		{"a flag at npud's default", []string{"--npu-max-prompt-len", "16384"}, nil, []string{"MAX_PROMPT_LEN"}},
		{"the environment", nil, []string{"NPUD_NPU_PREFIX_CACHING", "false"}, []string{"NPUW_LLM_ENABLE_PREFIX_CACHING"}},
		{"the file and a flag", []string{"--config", file, "--npu-prefill-chunk", "512"}, nil, []string{"GENERATE_HINT", "NPUW_LLM_PREFILL_CHUNK_SIZE"}},
		{"not an NPU property", []string{"--max-queue", "3", "--cache-dir", "/x"}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseServe(tc.args, env(tc.env...), io.Discard)
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, cfg.NPUOperatorSet)
			assert.ElementsMatch(t, tc.want, workerConfig(cfg, "openvino").NPUOperatorSet, "the workers know it too")
		})
	}
}
