package ollamaapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/reqinfo"
)

// message is one chat turn as Ollama sends it.
type message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Images    []string   `json:"images"`
	ToolCalls []toolCall `json:"tool_calls"`
	// A tool message names the function it answers, and may name the call.
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
}

// toolCall is Ollama's tool call: arguments are an object, not a string.
type toolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type toolDef struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// maxTools bounds the tools of one request.
const maxTools = 128

// tools checks the tool definitions.
func (r *request) tools() ([]npu.Tool, *Error) {
	if len(r.Tools) > maxTools {
		return nil, badRequest("tools: %d tools, at most %d are allowed", len(r.Tools), maxTools)
	}
	var out []npu.Tool
	seen := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		switch {
		case t.Type != "" && t.Type != "function":
			return nil, badRequest("tools[%d].type must be \"function\", got %q", i, reqinfo.Clip(t.Type))
		case t.Function == nil || t.Function.Name == "":
			return nil, badRequest("tools[%d].function.name is required", i)
		case len(t.Function.Name) > 64:
			return nil, badRequest("tools[%d].function.name is longer than 64 characters", i)
		case seen[t.Function.Name]:
			return nil, badRequest("tools[%d].function.name %q is declared twice", i, t.Function.Name)
		case isSet(t.Function.Parameters) && bytes.TrimSpace(t.Function.Parameters)[0] != '{':
			return nil, badRequest("tools[%d].function.parameters must be a JSON schema object", i)
		}
		seen[t.Function.Name] = true
		tool := npu.Tool{Name: t.Function.Name, Description: t.Function.Description}
		if isSet(t.Function.Parameters) {
			tool.Parameters = t.Function.Parameters
		}
		out = append(out, tool)
	}
	return out, nil
}

// request holds the fields of /api/generate and /api/chat.
type request struct {
	Model     string                     `json:"model"`
	Name      string                     `json:"name"` // alias of model, as ollama-js sends it for some calls
	Prompt    string                     `json:"prompt"`
	System    string                     `json:"system"`
	Suffix    string                     `json:"suffix"`
	Template  string                     `json:"template"`
	Raw       bool                       `json:"raw"`
	Images    []string                   `json:"images"`
	Context   []int                      `json:"context"`
	Messages  []message                  `json:"messages"`
	Tools     []toolDef                  `json:"tools"`
	Format    json.RawMessage            `json:"format"`
	Think     json.RawMessage            `json:"think"`
	Stream    *bool                      `json:"stream"`
	KeepAlive *keepAlive                 `json:"keep_alive"`
	Options   map[string]json.RawMessage `json:"options"`
}

// ModelName is the model the request asks for (reqinfo.Named): model, or
// name.
func (r *request) ModelName() string {
	if r.Model != "" {
		return r.Model
	}
	return r.Name
}

// stream reports whether to stream; Ollama streams unless told not to.
func (r *request) stream() bool { return r.Stream == nil || *r.Stream }

// keepAlive is a duration given as a Go duration string ("5m", "-1s"), a
// number of seconds (300, -1) or a string of one ("300").
type keepAlive struct{ d time.Duration }

// maxKeepAliveSeconds is the longest keep_alive a time.Duration holds
// (about 292 years); a longer one would wrap around to a short or negative
// one. Negative values (forever) are bounded the same way.
const maxKeepAliveSeconds = float64(math.MaxInt64) / float64(time.Second)

func keepAliveSeconds(secs float64, raw string) (time.Duration, error) {
	if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) >= maxKeepAliveSeconds {
		return 0, fmt.Errorf("keep_alive %s is out of range: use a duration such as \"5m\", a number of seconds, or -1 to keep the model loaded", raw)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func (k *keepAlive) UnmarshalJSON(b []byte) error {
	var secs float64
	if err := json.Unmarshal(b, &secs); err == nil {
		d, err := keepAliveSeconds(secs, string(b))
		k.d = d
		return err
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return jsonbody.TypeError(b, reflect.TypeFor[string]())
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		d, err := keepAliveSeconds(n, strconv.Quote(s))
		k.d = d
		return err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("keep_alive %q is not a duration (like \"5m\", \"-1\" or 300): %w", s, err)
	}
	k.d = d
	return nil
}

func (k *keepAlive) duration() *time.Duration {
	if k == nil {
		return nil
	}
	d := k.d
	return &d
}

func badRequest(format string, args ...any) *Error {
	return &Error{Base: errclass.Base{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}}
}

func isSet(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte(`""`)) && !bytes.Equal(t, []byte("false"))
}

// think reads Ollama's think: true, false, or a level ("low", "medium",
// "high") for models that take one.
func (r *request) think() (*bool, string, *Error) {
	if t := bytes.TrimSpace(r.Think); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, "", nil // unset: the model's default (isSet would drop false)
	}
	var on bool
	if json.Unmarshal(r.Think, &on) == nil {
		return &on, "", nil
	}
	var level string
	if json.Unmarshal(r.Think, &level) == nil && (level == "low" || level == "medium" || level == "high") {
		on = true
		return &on, level, nil
	}
	return nil, "", badRequest(`think must be true, false, "low", "medium" or "high", got %s`, reqinfo.Clip(string(r.Think)))
}

// format reads Ollama's format: "json" (any JSON object), a JSON Schema
// object, or none ("" or null).
func (r *request) format() (*npu.Format, *Error) {
	t := bytes.TrimSpace(r.Format)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte(`""`)) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(t, &s) == nil {
		if s != "json" {
			return nil, badRequest(`format must be "json" or a JSON schema object, got %q`, reqinfo.Clip(s))
		}
		return &npu.Format{Type: npu.FormatJSONObject}, nil
	}
	if t[0] != '{' {
		return nil, badRequest(`format must be "json" or a JSON schema object, got %s`, jsonbody.Kind(t))
	}
	if err := npu.CheckFormatSchema(t); err != nil {
		return nil, badRequest("format: %v", err)
	}
	return &npu.Format{Type: npu.FormatJSONSchema, Schema: t}, nil
}

// checkUnsupported refuses fields the engine cannot honour, saying so.
func (r *request) checkUnsupported(model string) *Error {
	refuse := func(field, why string) *Error {
		return badRequest("%q is not supported by model %q: %s", field, model, why)
	}
	switch {
	case r.Suffix != "":
		return refuse("suffix", "fill-in-the-middle is not available")
	case r.Raw:
		return refuse("raw", "the engine always applies the model's chat template")
	case r.Template != "":
		return refuse("template", "the model's own chat template is always used")
	case len(r.Context) > 0:
		return refuse("context", "conversation context arrays are not kept; send messages to /api/chat")
	}
	for i, m := range r.Messages {
		switch {
		case len(m.Images) > 0 && m.Role != "user":
			return badRequest("messages[%d].images: only user messages carry images", i)
		case len(m.ToolCalls) > 0 && m.Role != "assistant":
			return badRequest("messages[%d].tool_calls: only assistant messages make tool calls", i)
		case m.Role != "system" && m.Role != "user" && m.Role != "assistant" && m.Role != "tool":
			return badRequest("messages[%d].role %q is not supported: use system, user, assistant or tool", i, reqinfo.Clip(m.Role))
		}
		for j, c := range m.ToolCalls {
			if c.Function.Name == "" {
				return badRequest("messages[%d].tool_calls[%d].function.name is required", i, j)
			}
			if isSet(c.Function.Arguments) && bytes.TrimSpace(c.Function.Arguments)[0] != '{' {
				return badRequest("messages[%d].tool_calls[%d].function.arguments must be an object", i, j)
			}
		}
	}
	return nil
}

// applyOptions maps Ollama's options onto the engine request. Unknown keys
// are ignored (clients still send retired ones); a known key of the wrong
// type is a 400 naming it.
func applyOptions(opts map[string]json.RawMessage, out *npu.Request, info npu.ModelInfo, log *slog.Logger) *Error {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad option deterministically
	for _, key := range keys {
		raw := opts[key]
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		if err := applyOption(key, raw, out, info); err != nil {
			return err
		}
		if !knownOptions[key] {
			log.Debug("ignoring unknown option", "option", reqinfo.Clip(key))
		}
	}
	return nil
}

var knownOptions = map[string]bool{
	"num_predict": true, "temperature": true, "top_k": true, "top_p": true, "min_p": true, "seed": true,
	"stop": true, "repeat_penalty": true, "presence_penalty": true, "frequency_penalty": true, "num_ctx": true,
}

func applyOption(key string, raw json.RawMessage, out *npu.Request, info npu.ModelInfo) *Error {
	num := func() (*float64, *Error) {
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, badRequest("option %q must be a number, got %s", key, jsonbody.Kind(raw))
		}
		return &v, nil
	}
	integer := func() (int, *Error) {
		var v int
		if err := json.Unmarshal(raw, &v); err != nil {
			return 0, badRequest("option %q must be an integer, got %s", key, jsonbody.Kind(raw))
		}
		return v, nil
	}
	// A number's range is checked with the engine's limits
	// (npu.Request.Validate), the one table every API uses.
	number := func(dst **float64) *Error {
		v, err := num()
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}
	s := &out.Sampling
	switch key {
	case "temperature":
		return number(&s.Temperature)
	case "top_p":
		return number(&s.TopP)
	case "min_p":
		return number(&s.MinP)
	case "presence_penalty":
		return number(&s.PresencePenalty)
	case "frequency_penalty":
		return number(&s.FrequencyPenalty)
	case "repeat_penalty":
		return number(&s.RepetitionPenalty)
	case "top_k":
		v, err := integer()
		if err != nil {
			return err
		}
		if v < 0 {
			return badRequest("option \"top_k\" must be 0 or more, got %d", v)
		}
		s.TopK = &v
	case "seed":
		v, err := integer()
		if err != nil {
			return err
		}
		seed := int64(v)
		s.Seed = &seed
	case "num_predict":
		v, err := integer()
		if err != nil {
			return err
		}
		switch {
		case v == -1 || v == -2: // no limit; fill the context
			out.MaxTokens = 0
		case v > 0:
			out.MaxTokens = v
		default:
			return badRequest("option \"num_predict\" must be positive, -1 (no limit) or -2 (fill the context), got %d", v)
		}
	case "num_ctx":
		v, err := integer()
		if err != nil {
			return err
		}
		if v <= 0 || v > info.ContextLength {
			return badRequest("option \"num_ctx\" %d is outside what model %q allows (1 to %d)", v, info.ID, info.ContextLength)
		}
		out.ContextLength = v
	case "stop":
		var one string
		if json.Unmarshal(raw, &one) == nil {
			out.Stop = []string{one}
			break
		}
		var many []string
		if err := json.Unmarshal(raw, &many); err != nil {
			return badRequest("option \"stop\" must be a string or an array of strings, got %s", jsonbody.Kind(raw))
		}
		out.Stop = many
	}
	for i, st := range out.Stop {
		if st == "" {
			return badRequest("option \"stop\"[%d] is empty: stop strings must not be empty", i)
		}
	}
	return nil
}

// decodeImages reads the base64 images of a generate request (into its
// one user message) or of a chat's messages into out, within limits, once
// model m (looked up already) is known to see images. The decoded
// pictures hold their share of the image memory until out.Release (set
// here) runs.
func (r *request) decodeImages(limits imagein.Limits, m npu.ModelInfo, ep endpoint, out *npu.Request, retryAfter func() time.Duration) *Error {
	n := len(r.Images)
	for _, m := range r.Messages {
		n += len(m.Images)
	}
	if n == 0 {
		return nil
	}
	if err := limits.CheckCount(n); err != nil {
		return badRequest("%v", err)
	}
	if err := npu.CheckVision(m); err != nil {
		return toError(err, retryAfter, nil, pullAdvice)
	}
	batch := limits.Begin()
	decode := func(field string, images []string) ([]npu.Image, *Error) {
		var out []npu.Image
		for j, b64 := range images {
			img, err := batch.FromBase64(b64)
			if err != nil {
				batch.Release()
				if !errors.Is(err, imagein.ErrInvalid) {
					return nil, toError(err, retryAfter, nil, pullAdvice) // the image memory is in use: 503
				}
				return nil, badRequest("%s[%d]: %v", field, j, err)
			}
			out = append(out, img)
		}
		return out, nil
	}
	if ep == generateEndpoint {
		imgs, apiErr := decode("images", r.Images)
		if apiErr != nil {
			return apiErr
		}
		if out.Prompt != "" || len(out.Messages) == 0 {
			out.Messages = []npu.Message{{Role: "user", Content: out.Prompt}}
			out.Prompt = ""
		}
		last := &out.Messages[len(out.Messages)-1]
		last.Images = imgs
		out.Release = batch.Release
		return nil
	}
	for i, m := range r.Messages {
		imgs, apiErr := decode(fmt.Sprintf("messages[%d].images", i), m.Images)
		if apiErr != nil {
			return apiErr
		}
		out.Messages[i].Images = imgs
	}
	out.Release = batch.Release
	return nil
}

// generateMessages turns a generate request into a plain prompt, or into
// chat messages when it has a system prompt.
func (r *request) generateMessages() (prompt string, messages []npu.Message) {
	if r.System == "" {
		return r.Prompt, nil
	}
	return "", []npu.Message{{Role: "system", Content: r.System}, {Role: "user", Content: r.Prompt}}
}

func chatMessages(in []message) []npu.Message {
	out := make([]npu.Message, len(in))
	for i, m := range in {
		msg := npu.Message{Role: m.Role, Content: m.Content, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			args := "{}"
			if isSet(c.Function.Arguments) {
				var compact bytes.Buffer
				if json.Compact(&compact, c.Function.Arguments) == nil {
					args = compact.String()
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, npu.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		out[i] = msg
	}
	return out
}
