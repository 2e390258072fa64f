//go:build cgo

package openvino

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// Issue 38.3: a model folder's npud-properties.json shapes its pipeline
// over npud's defaults, never over what the operator configured, and one
// that sets what a folder may not (the compile cache's folder) fails the
// load, naming the property, before anything is compiled.
func TestFolderPropertiesUnderTheOperator(t *testing.T) {
	long := []npu.Message{{Role: "user", Content: words("a", 200)}}
	cases := []struct {
		name     string
		file     string
		operator []string
		wantErr  error  // of the generation; nil: it runs
		errText  string // in the error
	}{
		{"the folder's prompt limit over npud's default", `{"MAX_PROMPT_LEN": 40}`, nil, npu.ErrContextLength, "MAX_PROMPT_LEN"},
		{"the operator's prompt limit wins", `{"MAX_PROMPT_LEN": 40}`, []string{"MAX_PROMPT_LEN"}, nil, ""},
		{"a compile cache of the folder's is refused", `{"CACHE_DIR": "EVIL"}`, nil, modelstore.ErrPropertyRefused, "CACHE_DIR: a path"},
		{"an unknown property is refused", `{"NPU_TURBO": true}`, nil, modelstore.ErrPropertyRefused, "NPU_TURBO: not a property a model folder may set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := modelsDir(t, "tiny")
			evil := filepath.Join(t.TempDir(), "evil")
			file := tc.file
			if tc.file == `{"CACHE_DIR": "EVIL"}` {
				file = `{"CACHE_DIR": "` + evil + `"}`
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "tiny", modelstore.PropertiesFile), []byte(file), 0o644))
			_, r := newTestEngine(t, "NPU", Config{Device: "NPU", ModelsDir: dir, MaxPromptLen: 16384, MinResponseLen: 1024,
				CacheDir: t.TempDir(), OperatorSet: tc.operator})
			_, _, err := run(t, r, &npu.Request{Model: "tiny", Messages: long, MaxTokens: 2})
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.wantErr), "%v", err)
			assert.Contains(t, err.Error(), tc.errText)
			_, statErr := os.Stat(evil)
			assert.True(t, os.IsNotExist(statErr), "nothing is written where the folder pointed")
		})
	}
}
