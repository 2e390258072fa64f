package openaiwire

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/npud/npud/npu/wirefmt/jsonbody"
)

// ChatRequest is a chat completion request (and a legacy completion's,
// which has a prompt instead of messages), as the OpenAI API decodes it
// and the upstream engine sends it. Unknown fields are ignored on decode,
// as OpenAI-compatible servers do; every field npud does not always send
// is omitempty, so what goes upstream is what npud set.
type ChatRequest struct {
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Prompt   json.RawMessage `json:"prompt,omitempty"` // /v1/completions only
	Stream   bool            `json:"stream"`
	// StreamOptions.IncludeUsage asks for a last chunk with the usage.
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	Stop                StopList        `json:"stop,omitempty"`
	ReasoningEffort     *string         `json:"reasoning_effort,omitempty"` // none, minimal, low, medium, high
	Tools               []Tool          `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"` // auto, none, required, or {"type":"function","function":{"name":…}}
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	N                   *int            `json:"n,omitempty"`
	User                string          `json:"user,omitempty"`

	// npud's extensions.
	TopK              *int     `json:"top_k,omitempty"`
	MinP              *float64 `json:"min_p,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	TimeoutMS         *int64   `json:"timeout_ms,omitempty"`
	// Resumable keeps the generation running for the resume window after
	// the client left, and numbers the events (id: lines) so that a
	// reconnect with Last-Event-ID continues where it stopped. Also the
	// header X-Npud-Resumable: true.
	Resumable bool `json:"resumable,omitempty"`

	// ResponseFormat is the structured output the answer must be.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// Functions and FunctionCall are the legacy forms of Tools and
	// ToolChoice ("none", "auto" or {"name": …}).
	Functions    []Function      `json:"functions,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`

	// Fields of OpenAI's that npud reads to refuse what it cannot do
	// (rather than silently drop what a client asked for).
	Logprobs    json.RawMessage `json:"logprobs,omitempty"`
	TopLogprobs *int            `json:"top_logprobs,omitempty"`
	Echo        bool            `json:"echo,omitempty"`
	BestOf      *int            `json:"best_of,omitempty"`
	Suffix      *string         `json:"suffix,omitempty"`
}

// ModelName is the model the request asks for.
func (r *ChatRequest) ModelName() string { return r.Model }

// StreamOptions are a streamed request's options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ResponseFormat is a request's response_format: {"type": "text"},
// {"type": "json_object"} or {"type": "json_schema", "json_schema": …}.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a json_schema response_format's schema and what names it.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Message is a chat message.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// An assistant message's calls, and which call a tool message answers.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// The legacy function calling's: an assistant message's one call,
	// and the function a "function" message answers.
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
	Name         string        `json:"name,omitempty"`
}

// Content is a message's content: a string, null, or an array of parts,
// of which text and image_url parts are taken and the first part of
// another kind is recorded, so that a server can name what it refuses.
type Content struct {
	Text        string
	ImageURLs   []string // the image_url parts' URLs, in order
	NonTextPart string   // type of the first part of another kind, if any
	Present     bool     // the message had a content field
	Null        bool     // and it was null
}

// UnmarshalJSON reads a string, null or parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	c.Present = true
	switch {
	case bytes.Equal(b, []byte("null")):
		c.Null = true
		return nil
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &c.Text)
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type     string   `json:"type"`
			Text     string   `json:"text"`
			ImageURL imageURL `json:"image_url"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var buf bytes.Buffer
		for _, p := range parts {
			switch {
			case p.Type == "text":
				buf.WriteString(p.Text)
			case p.Type == "image_url":
				c.ImageURLs = append(c.ImageURLs, string(p.ImageURL)) // "" is refused with the others
			case c.NonTextPart == "":
				c.NonTextPart = p.Type
			}
		}
		c.Text = buf.String()
		return nil
	}
	return jsonbody.TypeError(b, reflect.TypeFor[string]())
}

// MarshalJSON writes null, the text as a string, or, with images, a text
// part followed by an image_url part per image.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.Null:
		return []byte("null"), nil
	case len(c.ImageURLs) == 0:
		return json.Marshal(c.Text)
	}
	type url struct {
		URL string `json:"url"`
	}
	type part struct {
		ImageURL *url    `json:"image_url,omitempty"`
		Text     *string `json:"text,omitempty"`
		Type     string  `json:"type"`
	}
	parts := []part{{Text: &c.Text, Type: "text"}}
	for _, u := range c.ImageURLs {
		parts = append(parts, part{ImageURL: &url{URL: u}, Type: "image_url"})
	}
	return json.Marshal(parts)
}

// imageURL is an image_url part's address: {"url": …} as OpenAI sends
// it, or the bare string some clients send.
type imageURL string

func (u *imageURL) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*u = imageURL(s)
		return nil
	}
	var obj struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return jsonbody.TypeError(b, reflect.TypeFor[string]())
	}
	*u = imageURL(obj.URL)
	return nil
}

// StopList is a request's stop: a string or an array of strings.
type StopList []string

// UnmarshalJSON reads a string, an array of strings, or null.
func (s *StopList) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = StopList{one}
		return nil
	case len(b) > 0 && b[0] == '[':
		var many []string
		if err := json.Unmarshal(b, &many); err != nil {
			return err
		}
		*s = many
		return nil
	}
	return jsonbody.TypeError(b, reflect.TypeFor[[]string]())
}

// The finish reasons of a choice.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
)

// Usage is OpenAI's usage object: the whole answer's, and a stream's last
// chunk's when the request asked for it (npud's WebSocket sends it too).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptDetails says how much of the prompt came from the engine's
	// cache of the conversation (OpenAI's prompt caching field); only
	// when some did.
	PromptDetails *PromptDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptDetails is a usage's prompt_tokens_details.
type PromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// ChatChunk is one event of a streamed chat completion. The OpenAI API
// writes its chunks with a hand-written encoder (they are the hot path);
// its tests and the upstream engine read them as this.
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage"` // the last chunk's, with include_usage
	// Error is an error after the stream began: OpenAI's error object
	// where a chunk would be.
	Error json.RawMessage `json:"error"`
}

// ChunkChoice is a chunk's choice: a delta, and the finish reason on the
// last one.
type ChunkChoice struct {
	Index        int        `json:"index"`
	Delta        ChunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

// ChunkDelta is what a chunk adds to the message. Servers name the
// model's reasoning reasoning_content (as npud does) or reasoning.
type ChunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}
