package daemon

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUpstream(t *testing.T) {
	env := map[string]string{"NPUD_UPSTREAM_GPU_BOX_KEY": "from-env"}
	getenv := func(k string) string { return env[k] }
	got, err := ParseUpstream("gpu-box=http://10.0.0.5:8000/v1;models=llama|qwen 2;caps=tools|vision;timeout=30s;slots=32;health=1s", getenv)
	require.NoError(t, err)
	assert.Equal(t, "gpu-box", got.Name)
	assert.Equal(t, "http://10.0.0.5:8000/v1", got.URL)
	assert.Equal(t, []string{"llama", "qwen 2"}, got.Models)
	assert.Equal(t, 30*time.Second, got.Timeout)
	assert.Equal(t, time.Second, got.HealthInterval)
	assert.Equal(t, 32, got.Slots)
	assert.Equal(t, []string{"tools", "vision"}, got.Capabilities)
	assert.Equal(t, "from-env", got.APIKey, "the key from the environment")
	got, err = ParseUpstream("gpu-box=https://x;models=a;key=inline", getenv)
	require.NoError(t, err)
	assert.Equal(t, "inline", got.APIKey)
	assert.Equal(t, defaultUpstreamSlots, got.Slots)

	for spec, want := range map[string]string{
		"gpu":                               "want NAME=URL",
		"gpu=http://x":                      "models=A|B is required",
		"gpu=ftp://x;models=a":              "http:// or https://",
		"g/u=http://x;models=a":             "the name must be",
		"gpu=http://x;models=a;timeout=-1s": "positive duration",
		"gpu=http://x;models=a;slots=0":     "positive number",
		"gpu=http://x;models=a;colour=red":  "unknown option",
		"gpu=http://x;models":               "want key=value",
		"gpu=http://x;models=a;caps=flying": "want tools, vision or thinking",
	} {
		_, err := ParseUpstream(spec, getenv)
		assert.ErrorContains(t, err, want, spec)
	}
}
