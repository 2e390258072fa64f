package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPullCommand(t *testing.T) {
	files := map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"}
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/models/OpenVINO/tiny-ov/tree/main" {
			var list []map[string]any
			for p, b := range files {
				list = append(list, map[string]any{"type": "file", "path": p, "size": len(b)})
			}
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		if b, ok := files[strings.TrimPrefix(r.URL.Path, "/OpenVINO/tiny-ov/resolve/main/")]; ok {
			_, _ = io.WriteString(w, b)
			return
		}
		http.NotFound(w, r)
	}))
	defer hubSrv.Close()
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
