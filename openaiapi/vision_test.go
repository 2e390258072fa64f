package openaiapi_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// redBluePNG is a 2×1 PNG: a red pixel and a blue one.
func redBluePNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.Set(0, 0, color.NRGBA{255, 0, 0, 255})
	img.Set(1, 0, color.NRGBA{0, 0, 255, 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// Issue 16: an image_url data URL through openai-go reaches the model as
// a decoded picture (the simulated model describes its size).
func TestOpenAIGoImageURL(t *testing.T) {
	f := sdkFixtureFor(t, startSim(t, nil, nil))
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(redBluePNG(t))
	params := openai.ChatCompletionNewParams{
		Model: "sim",
		Seed:  openai.Int(2),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}),
		})},
	}
	acc, _ := streamChat(t, f, params)
	assert.True(t, strings.HasPrefix(acc.Choices[0].Message.Content, "I see an image of 2x1 pixels."), acc.Choices[0].Message.Content)

	// Some clients send image_url as a bare string.
	c := daemontest.NewClient(t, f.srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":[{"type":"image_url","image_url":"`+url+`"}]}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "I see an image of 2x1 pixels.")
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), "needs a url")
}

func TestImageLimits(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.MaxImages = 1; c.MaxImagePixels = 1 }, nil)
	c := daemontest.NewClient(t, srv.URL)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(redBluePNG(t))
	part := `{"type":"image_url","image_url":{"url":"` + url + `"}}`
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":[`+part+`,`+part+`]}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), "at most 1 are allowed")
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":[`+part+`]}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), "--max-image-pixels")
	assert.Contains(t, string(raw), `"code":"invalid_image"`)
}
