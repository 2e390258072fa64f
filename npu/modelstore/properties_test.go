package modelstore

import (
	"errors"
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
		{"typed values", `{"MAX_PROMPT_LEN": 8192, "NPUW_LLM_ENABLE_PREFIX_CACHING": true, "PREFILL_HINT": "DYNAMIC", "STATIC_PIPELINE": false}`,
			[]Property{{"MAX_PROMPT_LEN", "8192"}, {"NPUW_LLM_ENABLE_PREFIX_CACHING", "YES"}, {"PREFILL_HINT", "DYNAMIC"}, {"STATIC_PIPELINE", "NO"}}, ""},
		{"a fraction", `{"MAX_PROMPT_LEN": 1.5}`, nil, "MAX_PROMPT_LEN: 1.5 is not an integer"},
		{"an object", `{"NPUW_LLM_PREFILL_CONFIG": {"A": 1}}`, nil, "NPUW_LLM_PREFILL_CONFIG: a value must be"},
		{"null", `{"CACHE_DIR": null}`, nil, "CACHE_DIR: a value must be"},
		{"a bad name", `{"max prompt": 1}`, nil, "not an OpenVINO property name"},
		{"not an object", `[1]`, nil, "not a JSON object"},
		{"two objects", `{} {}`, nil, "text after the JSON object"},
		{"a NUL", `{"PREFILL_HINT": "a\u0000b"}`, nil, "NUL"},
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

// Issue 38.3: a model folder (a pulled repository) may set only the
// properties that shape its pipeline, within bounds; a path (CACHE_DIR
// pointed anywhere the worker can write), an unknown property or a value
// out of bounds fails the read, naming every property refused and why,
// instead of reaching the plugins or being dropped silently.
func TestAModelFolderMaySetOnlyAllowedProperties(t *testing.T) {
	cases := []struct {
		name, file string
		refused    []string // each named in the error, with why
	}{
		{"the compile cache", `{"CACHE_DIR": "/etc/cron.d"}`, []string{"CACHE_DIR: a path"}},
		{"a path in an allowed property", `{"PREFILL_HINT": "../../x"}`, []string{"PREFILL_HINT: a path"}},
		{"a nested configuration", `{"PREFILL_CONFIG": "NPUW_DUMP_FULL YES"}`, []string{"PREFILL_CONFIG: not a property a model folder may set"}},
		{"an NPUW section added to", `{"++NPUW_LLM_PREFILL_CONFIG": "X"}`, []string{"++NPUW_LLM_PREFILL_CONFIG: not a property"}},
		{"an unknown plugin property", `{"NPU_TURBO": true}`, []string{"NPU_TURBO: not a property a model folder may set (it may set ATTENTION_BACKEND, GENERATE_HINT, MAX_PROMPT_LEN"}},
		{"a prompt no box holds", `{"MAX_PROMPT_LEN": 4000000000}`, []string{`MAX_PROMPT_LEN: "4000000000" is not an integer from 1 to 262144`}},
		{"a chunk NPUW refuses", `{"NPUW_LLM_PREFILL_CHUNK_SIZE": 1000}`, []string{"NPUW_LLM_PREFILL_CHUNK_SIZE: \"1000\" is not a power of two"}},
		{"a hint that is not one", `{"GENERATE_HINT": "FASTEST"}`, []string{`GENERATE_HINT: "FASTEST" is not one of FAST_COMPILE, BEST_PERF`}},
		{"every refusal named", `{"CACHE_DIR": "/tmp/x", "NPU_TURBO": true, "MAX_PROMPT_LEN": 4096}`,
			[]string{"CACHE_DIR: a path", "NPU_TURBO: not a property"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, PropertiesFile), []byte(tc.file), 0o644))
			got, err := ReadProperties(dir)
			require.Error(t, err)
			assert.Nil(t, got, "nothing of a refused file is used")
			assert.True(t, errors.Is(err, ErrPropertyRefused), "%v", err)
			for _, r := range tc.refused {
				assert.Contains(t, err.Error(), r)
			}
			if strings.Contains(tc.file, `"MAX_PROMPT_LEN": 4096`) {
				assert.NotContains(t, err.Error(), "MAX_PROMPT_LEN:", "an allowed property is not refused")
			}
		})
	}
	for _, name := range FolderPropertyNames() {
		assert.False(t, pathProperties[name], "%s is allowed and a path", name)
	}
}

// The limits a model reports follow what its pipeline is compiled with:
// the folder's values over npud's defaults, never over the operator's.
func TestNPUPromptLimitsTheOperatorWins(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, PropertiesFile), []byte(`{"MAX_PROMPT_LEN": 32768, "MIN_RESPONSE_LEN": 2048}`), 0o644))
	refused := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(refused, PropertiesFile), []byte(`{"MAX_PROMPT_LEN": 32768, "CACHE_DIR": "/tmp"}`), 0o644))
	cases := []struct {
		name             string
		dir              string
		operator         []string
		prompt, response int
	}{
		{"the folder over npud's defaults", dir, nil, 32768, 2048},
		{"the operator's prompt length wins", dir, []string{"MAX_PROMPT_LEN"}, 16384, 2048},
		{"the operator's both win", dir, []string{"MAX_PROMPT_LEN", "MIN_RESPONSE_LEN"}, 16384, 1024},
		{"a refused file sets nothing", refused, nil, 16384, 1024},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, r := NPUPromptLimits(tc.dir, 16384, 1024, tc.operator)
			assert.Equal(t, tc.prompt, p)
			assert.Equal(t, tc.response, r)
		})
	}
}

// npud show (through /api/show) lists what the folder sets, or why its
// file is refused, without the server's path.
func TestDescribeListsTheFolderProperties(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, PropertiesFile), []byte(`{"MAX_PROMPT_LEN": 8192, "NPUW_LLM_ENABLE_PREFIX_CACHING": false}`), 0o644))
	d := Describe(dir, "m")
	assert.Equal(t, map[string]string{"MAX_PROMPT_LEN": "8192", "NPUW_LLM_ENABLE_PREFIX_CACHING": "NO"}, d.Properties)
	assert.Empty(t, d.PropertiesRefused)

	require.NoError(t, os.WriteFile(filepath.Join(dir, PropertiesFile), []byte(`{"CACHE_DIR": "/var/tmp/x"}`), 0o644))
	d = Describe(dir, "m")
	assert.Nil(t, d.Properties)
	assert.Contains(t, d.PropertiesRefused, "CACHE_DIR: a path")
	assert.NotContains(t, d.PropertiesRefused, dir)
}

func manyProperties(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"P` + strings.Repeat("X", i+1) + `": 1`
	}
	return strings.Join(parts, ",")
}
