package modelstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadProperties(t *testing.T) {
	cases := []struct {
		name, file string
		want       []Property
		err        string
	}{
		{"no file", "", nil, ""},
		{"typed values", `{"MAX_PROMPT_LEN": 8192, "NPUW_LLM_ENABLE_PREFIX_CACHING": true, "PREFILL_HINT": "DYNAMIC", "NPU_TURBO": false}`,
			[]Property{{"MAX_PROMPT_LEN", "8192"}, {"NPUW_LLM_ENABLE_PREFIX_CACHING", "YES"}, {"NPU_TURBO", "NO"}, {"PREFILL_HINT", "DYNAMIC"}}, ""},
		{"a fraction", `{"MAX_PROMPT_LEN": 1.5}`, nil, "MAX_PROMPT_LEN: 1.5 is not an integer"},
		{"an object", `{"NPUW_LLM_PREFILL_CONFIG": {"A": 1}}`, nil, "NPUW_LLM_PREFILL_CONFIG: a value must be"},
		{"null", `{"CACHE_DIR": null}`, nil, "CACHE_DIR: a value must be"},
		{"a bad name", `{"max prompt": 1}`, nil, "not an OpenVINO property name"},
		{"not an object", `[1]`, nil, "not a JSON object"},
		{"two objects", `{} {}`, nil, "text after the JSON object"},
		{"a NUL", `{"CACHE_DIR": "a\u0000b"}`, nil, "NUL"},
		{"too many", "{" + manyProperties(25) + "}", nil, "at most 24"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, PropertiesFile), []byte(tc.file), 0o644))
			}
			got, err := ReadProperties(dir)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func manyProperties(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"P` + strings.Repeat("X", i+1) + `": 1`
	}
	return strings.Join(parts, ",")
}
