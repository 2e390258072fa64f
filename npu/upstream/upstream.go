// Package upstream is an engine that streams from another server's
// OpenAI-compatible /v1/chat/completions (vLLM, OpenVINO Model Server, a
// GPU Ollama, another npud): for models a box cannot hold, and for overflow
// when its own queue is deep. Its tokens go through the same bridge as the
// native engine's, so heartbeats, terminators, stop strings, backpressure,
// cancellation, metrics and the journal behave the same. The upstream's
// event stream is parsed and checked, never passed through: nothing it
// sends can break npud's own framing.
package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
)

// Config describes one upstream server.
type Config struct {
	Name string // for logs, metrics (device "upstream:NAME") and errors
	// URL is the server's base, up to and without /chat/completions:
	// http://host:8000/v1 (a URL without a path gets /v1).
	URL    string
	APIKey string   // sent as a bearer token when set
	Models []string // the models it serves, by the names clients use
	// Capabilities are what those models can do besides completion:
	// "tools", "vision", "thinking". Requests needing another are refused
	// here; those needing one of them are relayed.
	Capabilities []string
	// Timeout bounds every phase of a request on its own: the dial, the
	// TLS handshake, the wait for the response headers, and then each gap
	// between its events (and the health check whole); 0 = 60 s.
	Timeout time.Duration
	// HealthInterval is how often an upstream taken out of rotation is
	// checked (GET /models); 0 = 5 s.
	HealthInterval time.Duration
	// Client makes the requests; nil = a client of its own. Either way
	// it follows no redirect: the key goes to the configured URL only.
	Client *http.Client
}

// Engine streams generations from one upstream server.
type Engine struct {
	npu.Unsupported // generation only: the upstream owns its models

	cfg     Config
	base    string
	client  *http.Client
	log     *slog.Logger
	created time.Time

	mu        sync.Mutex
	healthy   bool
	lastError string
	checking  bool
	// life is the engine's own context: health checks run under it, not
	// under the request that found the upstream down, and Close ends it.
	life context.Context
	stop context.CancelFunc
}

var _ npu.Engine = (*Engine)(nil)

// maxEventBytes bounds one event line of the upstream's stream.
const maxEventBytes = 1 << 20

// maxTokenBytes bounds the text one token of the upstream's may stand
// for, so that max_tokens also bounds an upstream that packs much text
// into each event.
const maxTokenBytes = 64

// maxLoggedBody bounds what of an upstream's error answer goes to the log.
const maxLoggedBody = 1024

// New returns the engine for cfg.
func New(cfg Config, log *slog.Logger) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := strings.TrimRight(cfg.URL, "/")
	if rest := base[strings.Index(base, "//")+2:]; !strings.Contains(rest, "/") {
		base += "/v1"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = 5 * time.Second
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}}
	if cfg.Client != nil {
		c := *cfg.Client
		client = &c
	}
	// A redirect would carry the key (and the tenant's prompt) to wherever
	// the upstream points: none is followed, the 3xx is an error.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	life, stop := context.WithCancel(context.Background())
	return &Engine{cfg: cfg, base: base, client: client, log: log, created: time.Now(), healthy: true,
		life: life, stop: stop}, nil
}

// Validate checks what New needs of cfg: a name and an http(s) URL.
func (c Config) Validate() error {
	if c.Name == "" || c.URL == "" {
		return errors.New("an upstream needs a name and a URL")
	}
	if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return fmt.Errorf("upstream %q: URL %q: want http:// or https://", c.Name, c.URL)
	}
	return nil
}

// Name is the engine's name in logs.
func (e *Engine) Name() string { return "upstream:" + e.cfg.Name }

// Simulated: an upstream runs a real model.
func (e *Engine) Simulated() bool { return false }

// Describe implements npu.Engine: an upstream generates and nothing else
// (embeddings and transcription are not relayed).
func (e *Engine) Describe() npu.Features { return npu.Features{} }

// Models are the models the upstream serves, as configured.
func (e *Engine) Models() []npu.ModelInfo {
	var d npu.ModelDetails
	for _, c := range e.cfg.Capabilities {
		switch c {
		case "tools":
			// The upstream's calls come back structured; relay hands
			// them to the bridge in a form no text can take.
			d.ToolFormat = chatfmt.Relayed{}.Name()
		case "vision":
			d.Vision = true
		case "thinking":
			d.Thinking = true
		}
	}
	out := make([]npu.ModelInfo, len(e.cfg.Models))
	for i, m := range e.cfg.Models {
		out[i] = npu.ModelInfo{ID: m, OwnedBy: e.Name(), Created: e.created, Details: d}
	}
	return out
}

// Serves reports whether the upstream serves model.
func (e *Engine) Serves(model string) bool {
	for _, m := range e.cfg.Models {
		if m == model {
			return true
		}
	}
	return false
}

// DeviceOf is where a model runs: on this upstream.
func (e *Engine) DeviceOf(model string) string {
	if e.Serves(model) {
		return e.Name()
	}
	return ""
}

// Healthy reports whether the upstream is in rotation, and why not.
func (e *Engine) Healthy() (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.healthy, e.lastError
}

// Close stops the health checks, one under way too.
func (e *Engine) Close() { e.stop() }

// markDown takes the upstream out of rotation and checks it until it
// answers again.
func (e *Engine) markDown(why string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastError = why
	if !e.healthy {
		return
	}
	e.healthy = false
	e.log.Warn("upstream out of rotation", "upstream", e.cfg.Name, "error", why)
	if !e.checking {
		e.checking = true
		go e.checkUntilHealthy()
	}
}

// checkUntilHealthy asks the upstream every HealthInterval until it answers
// or the engine closes.
func (e *Engine) checkUntilHealthy() {
	t := time.NewTicker(e.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-e.life.Done():
			return
		case <-t.C:
		}
		if err := e.Check(e.life); err == nil {
			e.mu.Lock()
			e.healthy, e.checking, e.lastError = true, false, ""
			e.mu.Unlock()
			e.log.Info("upstream back in rotation", "upstream", e.cfg.Name)
			return
		}
	}
}

// Check asks the upstream for its models (GET /models): nil when it
// answers 200.
func (e *Engine) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/models", nil)
	if err != nil {
		return err
	}
	e.authorize(req)
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close() // drained: the connection is reused
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /models: %s", resp.Status)
	}
	return nil
}

func (e *Engine) authorize(req *http.Request) {
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
}

func (e *Engine) body(req *npu.Request) ([]byte, error) {
	out := openaiwire.ChatRequest{Model: req.Model, Stream: true, Temperature: req.Sampling.Temperature, TopP: req.Sampling.TopP,
		Seed: req.Sampling.Seed, PresencePenalty: req.Sampling.PresencePenalty, FrequencyPenalty: req.Sampling.FrequencyPenalty,
		Stop: req.Stop, StreamOptions: &openaiwire.StreamOptions{IncludeUsage: true}}
	if req.MaxTokens > 0 {
		out.MaxTokens = &req.MaxTokens
	}
	if req.Think != nil {
		effort := "none"
		if *req.Think {
			effort = "medium"
			if req.ThinkLevel != "" {
				effort = req.ThinkLevel
			}
		}
		out.ReasoningEffort = &effort
	}
	out.ResponseFormat = responseFormat(req.Format)
	msgs := req.Messages
	if len(msgs) == 0 {
		msgs = []npu.Message{{Role: "user", Content: req.Prompt}}
	}
	for _, m := range msgs {
		cm := openaiwire.Message{Role: m.Role, Content: openaiwire.Content{Text: m.Content}, ToolCallID: m.ToolCallID}
		for _, img := range m.Images {
			url, err := imageURL(img)
			if err != nil {
				return nil, err
			}
			cm.Content.ImageURLs = append(cm.Content.ImageURLs, url)
		}
		for _, c := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, openaiwire.ToolCall{ID: c.ID, Type: "function",
				Function: openaiwire.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		out.Messages = append(out.Messages, cm)
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, openaiwire.Tool{Type: "function",
			Function: &openaiwire.Function{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if len(out.Tools) > 0 {
		var choice any
		switch req.ToolChoice.Mode {
		case npu.ToolChoiceRequired:
			choice = npu.ToolChoiceRequired
		case npu.ToolChoiceFunction:
			choice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice.Name}}
		}
		if choice != nil {
			out.ToolChoice, _ = json.Marshal(choice) // strings only
		}
		if req.SingleToolCall {
			off := false
			out.ParallelToolCalls = &off
		}
	}
	return json.Marshal(out)
}

// responseFormat is the request's structured output as an OpenAI-compatible
// server takes it: response_format, which vLLM, OpenVINO Model Server,
// Ollama's /v1 (which turns it into its own format) and npud all read. A
// schema goes with its name ("response" when the client's API gives
// none, as Ollama's and Anthropic's do) and strict flag.
func responseFormat(f *npu.Format) *openaiwire.ResponseFormat {
	if f == nil {
		return nil
	}
	if f.Type != npu.FormatJSONSchema {
		return &openaiwire.ResponseFormat{Type: f.Type}
	}
	name := f.Name
	if name == "" {
		name = "response"
	}
	strict := f.Strict
	return &openaiwire.ResponseFormat{Type: f.Type, JSONSchema: &openaiwire.JSONSchema{Name: name, Schema: f.Schema, Strict: &strict}}
}

// imageURL is a picture as a PNG data URL, for an image_url part.
func imageURL(img npu.Image) (string, error) {
	rgba := image.NewNRGBA(image.Rect(0, 0, img.Width, img.Height))
	for i := 0; i < img.Width*img.Height && 3*i+2 < len(img.RGB); i++ {
		rgba.Pix[4*i], rgba.Pix[4*i+1], rgba.Pix[4*i+2], rgba.Pix[4*i+3] = img.RGB[3*i], img.RGB[3*i+1], img.RGB[3*i+2], 255
	}
	var b bytes.Buffer
	if err := png.Encode(&b, rgba); err != nil {
		return "", fmt.Errorf("encoding an image for the upstream: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes()), nil
}

// Generate implements npu.Engine: one streamed chat completion upstream.
// A Stop or Cancel from the sink closes the upstream request.
func (e *Engine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	if ok, why := e.Healthy(); !ok {
		return npu.Result{}, fmt.Errorf("upstream %q is out of rotation (%s): %w", e.cfg.Name, why, npu.ErrUpstreamUnavailable)
	}
	body, err := e.body(req)
	if err != nil {
		return npu.Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes the upstream request, however this ends
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return npu.Result{}, &npu.EngineError{Engine: e.Name(), Cause: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	e.authorize(hreq)
	start := time.Now()
	resp, err := e.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return npu.Result{FinishReason: npu.FinishCancelled}, ctx.Err()
		}
		e.markDown(err.Error())
		return npu.Result{}, fmt.Errorf("upstream %q: %w: %w", e.cfg.Name, err, npu.ErrUpstreamUnavailable)
	}
	defer func() { _ = resp.Body.Close() }() // read only
	if resp.StatusCode != http.StatusOK {
		return npu.Result{}, e.refusal(resp)
	}
	return e.relay(ctx, cancel, resp.Body, req, sink, start)
}

// refusal keeps the meaning of an upstream's error answer, in npud's own
// words: the upstream's body goes to the log (bounded), never to the
// tenant, since it may quote what the upstream saw (headers, the key). A
// 4xx is the request's fault (404: the model is unknown there); 401 and 403
// are npud's (its key); 429 and 503 are retryable; a 3xx is a redirect npud
// does not follow; other 5xx are engine errors.
func (e *Engine) refusal(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e.log.Warn("upstream refused a request", "upstream", e.cfg.Name, "status", resp.Status, "answer", e.clip(errorMessage(b)))
	name := e.cfg.Name
	class := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	cause := fmt.Errorf("upstream %q answered %s (its answer is in npud's log)", name, class)
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		e.markDown("it answers with a redirect")
		return &npu.EngineError{Engine: e.Name(), Cause: fmt.Errorf(
			"upstream %q answered with a redirect (%s), which npud does not follow: configure the final URL", name, class)}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		return fmt.Errorf("%w: %w", cause, npu.ErrUpstreamUnavailable)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return &npu.EngineError{Engine: e.Name(), Cause: fmt.Errorf("%w (check its API key)", cause)}
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", cause, npu.ErrModelNotFound)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return &npu.InvalidRequestError{Message: fmt.Sprintf("upstream %q refused the request (%s); its answer is in npud's log", name, class)}
	}
	if resp.StatusCode >= 500 {
		e.markDown(class)
	}
	return &npu.EngineError{Engine: e.Name(), Cause: cause}
}

// errorMessage is the message of an OpenAI (or Ollama) error body.
func errorMessage(b []byte) string {
	var oa struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &oa) != nil || len(oa.Error) == 0 {
		return strings.TrimSpace(string(b[:min(len(b), 512)]))
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(oa.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	var s string
	if json.Unmarshal(oa.Error, &s) == nil {
		return s
	}
	return string(oa.Error)
}

// clip bounds what of the upstream's text goes to a log line, and masks
// its key where the upstream quoted it.
func (e *Engine) clip(s string) string {
	if e.cfg.APIKey != "" {
		s = strings.ReplaceAll(s, e.cfg.APIKey, "****")
	}
	if len(s) <= maxLoggedBody {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:maxLoggedBody], len(s)-maxLoggedBody)
}
