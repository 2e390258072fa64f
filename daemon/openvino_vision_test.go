//go:build cgo

package daemon_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// Issue 16, on the OpenVINO engine through the test library: a model folder
// with a vision encoder loads through GenAI's VLM pipeline; the images,
// decoded to RGB, reach it as u8 [H, W, 3] tensors (the test model says
// each one's size and mean colour, so a wrong stride or channel order
// shows); a text model is refused images, naming it.
func TestOpenVINOVision(t *testing.T) {
	dir := t.TempDir()
	daemontest.WriteOpenVINOModel(t, dir, "text")
	vlm := filepath.Join(dir, "vlm")
	require.NoError(t, os.MkdirAll(vlm, 0o755))
	for file, content := range map[string]string{
		"openvino_language_model.xml":          "<net/>",
		"openvino_vision_embeddings_model.xml": "<net/>",
		"openvino_text_embeddings_model.xml":   "<net/>",
		"tokenizer_config.json":                `{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(vlm, file), []byte(content), 0o644))
	}
	c := daemontest.NewClient(t, startOpenVINOFolder(t, dir).URL)

	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.Set(0, 0, color.NRGBA{255, 0, 0, 255})
	img.Set(1, 0, color.NRGBA{0, 0, 255, 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	b64 := base64.StdEncoding.EncodeToString(b.Bytes())

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"vlm","messages":[{"role":"user","content":[`+
		`{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,`+b64+`"}}]}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.True(t, strings.HasPrefix(out.Choices[0].Message.Content, "I see 2x1 #800080."), out.Choices[0].Message.Content)

	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"vlm","stream":false,"messages":[`+
		`{"role":"user","content":"first","images":["`+b64+`"]},{"role":"assistant","content":"ok"},{"role":"user","content":"and?","images":["`+b64+`"]}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"content":"I see 2x1 #800080, 2x1 #800080.`, "every image of the conversation, in order")

	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"vlm","stream":false,"messages":[{"role":"user","content":"no picture"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.NotContains(t, string(raw), "I see")

	_, show := c.Do(t, http.MethodPost, "/api/show", `{"model":"vlm"}`)
	assert.Contains(t, string(show), `"vision"`)
	_, show = c.Do(t, http.MethodPost, "/api/show", `{"model":"text"}`)
	assert.NotContains(t, string(show), `"vision"`)

	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"text","stream":false,"messages":[{"role":"user","content":"x","images":["`+b64+`"]}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `model \"text\" does not support images`)
}
