package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/hub/hubtest"
)

func TestPullCommand(t *testing.T) {
	hubSrv := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
	models := t.TempDir()

	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"pull", "--models-dir", models, "OpenVINO/tiny-ov"},
		env("NPUD_HUB_ENDPOINT", hubSrv.URL), &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), `success: model "tiny-ov"`)
	got, err := os.ReadFile(filepath.Join(models, "tiny-ov", "openvino_model.bin"))
	require.NoError(t, err)
	assert.Equal(t, "weights", string(got))

	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, 2, Main(context.Background(), []string{"pull"}, env(), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "usage: npud pull")
	assert.Equal(t, 1, Main(context.Background(), []string{"pull", "--models-dir", models, "OpenVINO/tiny-ov"},
		env("NPUD_HUB_ENDPOINT", hubSrv.URL), &stdout, &stderr), "already there")
}
