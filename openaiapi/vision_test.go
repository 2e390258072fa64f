package openaiapi_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// grayPNG is a w×h 8-bit gray PNG: w·h decoder bytes and 3·w·h RGB bytes.
func grayPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))))
	return b.Bytes()
}

func imageChat(model string, file []byte) string {
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(file)
	return `{"model":"` + model + `","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
}

// Issue 25 item 1: the model is looked up before any image is decoded: a
// request for an unknown model is a 404 whatever its images hold (before,
// the images were decoded first, and a broken one answered 400).
func TestImagesOfUnknownModelAreNotDecoded(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	broken := grayPNG(t, 4, 4)[:40]
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", imageChat("no-such-model", broken))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "model_not_found")
	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"no-such-model","messages":[{"role":"user","content":"hi","images":["`+
		base64.StdEncoding.EncodeToString(broken)+`"]}]}`)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", raw)
}

// Issue 25 item 1: decoded images count against --max-image-memory from
// their decode until their generation ends, queued ones included; past it
// an image request is a 503 with Retry-After (in each protocol's shape),
// and the memory comes back when the generation ends.
func TestImageMemoryBudget(t *testing.T) {
	const side = 64 // 4 KiB decoder bytes + 12 KiB RGB
	srv := startSim(t, func(c *daemon.Config) { c.MaxImageMemory = 20 << 10; c.MaxQueue = 4 }, hogFaults(nil))
	c := daemontest.NewClient(t, srv.URL)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	release := startHog(t, hc, srv.URL)

	first := make(chan int, 1)
	go func() {
		resp, err := daemontest.Post(t.Context(), hc, srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(imageChat("sim", grayPNG(t, side, side))))
		if err != nil {
			first <- 0
			return
		}
		_ = resp.Body.Close()
		first <- resp.StatusCode
	}()
	waitFor(t, func() bool { return queued(t, hc, srv.URL) == 1 })

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", imageChat("sim", grayPNG(t, side, side)))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "12 KiB held by the queued request + 16 KiB: %s", raw)
	assert.Contains(t, string(raw), `"code":"queue_full"`)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"sim","stream":false,"messages":[{"role":"user","content":"hi","images":["`+
		base64.StdEncoding.EncodeToString(grayPNG(t, side, side))+`"]}]}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `{"error":`)

	release()
	assert.Equal(t, http.StatusOK, <-first)
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", imageChat("sim", grayPNG(t, side, side)))
	require.Equal(t, http.StatusOK, resp.StatusCode, "the memory came back when the generation ended: %s", raw)
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", imageChat("sim", grayPNG(t, side, side)))
	require.Equal(t, http.StatusOK, resp.StatusCode, "and again: %s", raw)
}

// Issue 25 item 3: with --allow-image-urls, an image URL on a loopback
// server is refused with the one generic text and the server never sees a
// request; --image-url-allow lets the operator open that range.
func TestImageURLsReachPublicAddressesOnly(t *testing.T) {
	var hits atomic.Int32
	file := redBluePNG(t)
	camera := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write(file)
	}))
	defer camera.Close()
	body := `{"model":"sim","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + camera.URL + `/cat.png"}}]}]}`

	srv := startSim(t, func(c *daemon.Config) { c.AllowImageURLs = true }, nil)
	resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, "/v1/chat/completions", body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "could not be fetched")
	assert.Zero(t, hits.Load(), "npud never connected to the loopback server")
	resp, raw = daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, "/v1/chat/completions",
		strings.Replace(body, `"sim"`, `"no-such-model"`, 1))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "nothing is fetched for an unknown model: %s", raw)

	allowed := startSim(t, func(c *daemon.Config) { c.AllowImageURLs, c.ImageURLAllow = true, []string{"127.0.0.0/8"} }, nil)
	resp, raw = daemontest.NewClient(t, allowed.URL).Do(t, http.MethodPost, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "I see an image of 2x1 pixels.")
	assert.EqualValues(t, 1, hits.Load())
}
