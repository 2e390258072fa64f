// Package npu is the contract every side of npud shares: the Engine
// interface and what crosses it (Request, Sink, Status, Result, Features,
// models and their details, transcriptions), the one error table
// (errors.go: sentinels, classes, EngineError), request validation and
// the completion limit, the Observer the daemon's metrics implement, and
// the Stream and Event a protocol writer reads (stream.go). The serving
// runtime that implements them (router, admission, pools, scheduler,
// lifecycle, the bridge) is npu/serve, which only the daemon imports; the
// engines (npu/sim, npu/openvino, npu/upstream, npu/worker), the APIs and
// wire see this package alone. The answer's text filters (UTF-8 assembly,
// stop strings, the <think> split, tool-call parsing; textparts.go) live
// here until the family package takes them.
//
// Data flows one way: request → router → scheduler → Engine → bridge →
// writer. Cancellation flows back the same path: the writer cancels the
// Stream, the bridge answers Cancel at the engine's next callback, the
// engine returns and frees its scheduler slot.
package npu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Status is what a Sink answers to an engine after each chunk of text. The
// values match OpenVINO GenAI's ov_genai_streaming_status_e so that the cgo
// engine can return them to native code unchanged.
type Status int

const (
	// Running asks the engine to keep generating.
	Running Status = 0
	// Stop asks the engine to finish normally; what was generated is kept.
	Stop Status = 1
	// Cancel asks the engine to abandon the generation.
	Cancel Status = 2
)

func (s Status) String() string {
	switch s {
	case Running:
		return "RUNNING"
	case Stop:
		return "STOP"
	case Cancel:
		return "CANCEL"
	}
	return "UNKNOWN"
}

// Sink receives decoded text from an engine. It may be called from any
// goroutine or native thread, and may be called once more after it answered
// Stop or Cancel (OpenVINO flushes its detokenizer then); both are safe.
// The engine must not call it concurrently with itself.
type Sink func(text string) Status

// Engine is the one contract between a pool and what runs models. The
// pool calls Generate from as many goroutines at once as it has
// scheduler slots (PoolConfig.Slots): one for a GenAI pipeline, which is
// not safe for concurrent generate; more for the simulated engine
// (--sim-slots) and an upstream (its slots=N), which run generations side
// by side.
//
// What an engine can do beyond generating is data (Describe), not a set of
// optional interfaces to probe: an operation it cannot perform answers an
// error wrapping ErrNotSupported, and the reports (DeviceOf, DeviceNames,
// ModelRestarts) answer their zero value. Engines embed Unsupported and
// override what they do; AssertFeatures in npu/nputest checks that an
// engine's Describe and its methods agree.
type Engine interface {
	// Name describes the engine for logs and /health ("sim", "openvino").
	Name() string
	// Simulated reports whether the engine makes up its text.
	Simulated() bool
	// Describe says which optional operations the engine performs.
	Describe() Features
	// Models lists the models this engine serves.
	Models() []ModelInfo
	// Generate runs one generation, calling sink with each decoded chunk.
	// It returns when generation ended: by finishing, by a Stop or Cancel
	// from the sink, by ctx ending, or by an error. Errors returned before
	// the first sink call are request errors (see ErrContextLength).
	Generate(ctx context.Context, req *Request, sink Sink) (Result, error)

	// Load places model's weights on a device (OpenVINO compiles it for
	// the NPU); Unload frees them. Features.LoadsModels. Engines
	// without it serve their models at any time; the lifecycle still
	// tracks them as loaded or not, so clients see the same keep-alive
	// behaviour.
	Load(ctx context.Context, model string) error
	Unload(model string) error
	// Reload replaces a loaded model with a fresh instance from its files
	// (after they changed on disk): the new one is built first and
	// swapped in only when it works, so on failure the old one keeps
	// serving. Features.Reloads.
	Reload(ctx context.Context, model string) error
	// Embed returns one vector per input and the number of input tokens.
	// An input longer than the model takes is cut to fit when truncate is
	// set (and counted in Embedded.Truncated), else refused with an
	// InvalidRequestError. Features.Embeds.
	Embed(ctx context.Context, model string, inputs []string, truncate bool) (Embedded, error)
	// Transcribe turns speech into text. Features.Transcribes.
	Transcribe(ctx context.Context, req *TranscribeRequest) (Transcript, error)
	// PromptTokens counts a request's prompt tokens before generating
	// (the simulator: OpenVINO GenAI's C API has no tokenizer), so the
	// pool applies CompletionLimit when it takes the request: a prompt
	// that does not fit is refused before anything is queued and a clamp
	// is known before the response starts (its header).
	// Features.CountsPrompts; ok is false without it.
	PromptTokens(req *Request) (n int, ok bool)
	// CountPrompt counts req's prompt as a generation of req would
	// prefill it (the model's own tokenizer over the text its chat
	// template renders), for a client asking before it sends the request
	// (Anthropic's count_tokens). It renders and counts only: nothing is
	// generated and no generation's slot is needed, so it may run beside
	// generations on the same model. The model is loaded (the pool's
	// lifecycle loads it first). Features.ExactCounts; a model whose
	// prompts the engine does not count (GenAI renders them) answers an
	// error wrapping ErrPromptNotCounted.
	CountPrompt(ctx context.Context, req *Request) (int, error)

	// DeviceOf is the device model is loaded on, or "" when it is not or
	// the engine places no models on devices.
	DeviceOf(model string) string
	// DeviceNames maps each device's short name (NPU, GPU.1) to its full
	// name, for people; nil for an engine on no device it can name.
	DeviceNames() map[string]string
	// ModelRestarts is how many times a fault restarted model's worker
	// process (0 for an engine in the daemon's process).
	ModelRestarts(model string) int
	// Close frees native resources (pipelines, workers); the daemon calls
	// it after every generation has returned.
	Close()
}

// Features is what an engine can do beyond generating text.
type Features struct {
	LoadsModels   bool // Load and Unload place and free weights
	Reloads       bool // Reload
	Embeds        bool // Embed
	Reranks       bool // Rerank (the engine is a Reranker)
	Transcribes   bool // Transcribe
	CountsPrompts bool // PromptTokens
	// ExactCounts: CountPrompt counts the prompts of the models whose
	// prompts the engine renders (ModelDetails.PromptRenderer is not
	// GenAIRenders).
	ExactCounts bool
}

// Unsupported answers every optional operation of Engine as an engine that
// cannot perform it: engines embed it and override what they can do (and
// say so in Describe).
type Unsupported struct{}

func (Unsupported) Load(_ context.Context, model string) error {
	return fmt.Errorf("model %q: loading onto a device: %w", model, ErrNotSupported)
}

func (Unsupported) Unload(model string) error {
	return fmt.Errorf("model %q: unloading from a device: %w", model, ErrNotSupported)
}

func (Unsupported) Reload(_ context.Context, model string) error {
	return fmt.Errorf("model %q: this engine cannot reload a model: %w", model, ErrNotSupported)
}

func (Unsupported) Embed(_ context.Context, model string, _ []string, _ bool) (Embedded, error) {
	return Embedded{}, fmt.Errorf("model %q does not support embeddings: %w", model, ErrNotSupported)
}

func (Unsupported) Transcribe(_ context.Context, req *TranscribeRequest) (Transcript, error) {
	return Transcript{}, fmt.Errorf("model %q: this engine does not transcribe audio: %w", req.Model, ErrNotSupported)
}

func (Unsupported) PromptTokens(*Request) (int, bool) { return 0, false }

func (Unsupported) CountPrompt(_ context.Context, req *Request) (int, error) {
	return 0, fmt.Errorf("model %q: this engine does not count prompts: %w", req.Model, ErrNotSupported)
}

func (Unsupported) DeviceOf(string) string         { return "" }
func (Unsupported) DeviceNames() map[string]string { return nil }
func (Unsupported) ModelRestarts(string) int       { return 0 }
func (Unsupported) Close()                         {}

// ModelInfo describes a model an engine serves.
type ModelInfo struct {
	ID            string
	OwnedBy       string
	Created       time.Time
	ContextLength int
	// PromptLimit is the longest prompt the model takes when that is less
	// than ContextLength allows (on the NPU, MAX_PROMPT_LEN); 0: none.
	PromptLimit int
	Size        int64 // bytes on disk; 0 when there are none (simulated)
	Details     ModelDetails
}

// ModelDetails is what a model's folder says about the model (its
// config.json, openvino_config.json and name). Zero values are unknown.
type ModelDetails struct {
	Architecture    string // config.json model_type, such as "qwen2"
	ParameterCount  int64  // estimated from config.json's shapes
	ParameterSize   string // for people: "1.5B"
	Quantization    string // the weights' format: "INT4", "INT8", "FP16"
	EmbeddingLength int    // hidden_size
	BlockCount      int    // num_hidden_layers
	HeadCount       int    // num_attention_heads
	HeadCountKV     int    // num_key_value_heads
	VocabSize       int
	TrainedContext  int // max_position_embeddings: what the model was trained for
	// Thinking: the model reasons (its chat template takes enable_thinking
	// or opens <think>), so requests may turn its reasoning on and off.
	Thinking bool
	// ToolFormat names the model's family (npu/chatfmt): how it writes
	// tool calls and reasoning, recognised from its chat template and
	// config.json; "" when its template renders no tools.
	ToolFormat string
	// PromptRenderer names the chat template npud renders the model's
	// prompts with itself (npu/chatfmt: "qwen3"); "genai" when GenAI
	// renders them from its template (one npud does not reproduce byte for
	// byte, or a vision model's); "" when the model has no template.
	PromptRenderer string
	// Vision: the model's folder holds a vision encoder, so it takes
	// images (through GenAI's VLM pipeline).
	Vision bool
	// Speech: the model transcribes audio (a Whisper folder, served by
	// GenAI's Whisper pipeline).
	Speech bool
	// SpeechOnly: the model only transcribes (Whisper): it takes no
	// prompts or chat messages.
	SpeechOnly bool
	// EmbeddingOnly: the model turns text into vectors (an encoder's
	// feature-extraction export): it takes no prompts or chat messages.
	EmbeddingOnly bool
	// EmbeddingPrompts are an embedding model's instructions by the kind
	// of text they go before ("query", "document"), from its folder
	// (modelstore.ReadEmbeddingPrompts); EmbeddingPromptsRefused is why
	// its folder's are unreadable ("" when they are not).
	EmbeddingPrompts        map[string]string
	EmbeddingPromptsRefused string
	// RerankOnly: the model scores query/document pairs (a cross-encoder's
	// text-classification export): it takes no prompts or chat messages.
	RerankOnly bool
	// Properties are the engine properties the model's folder sets (its
	// npud-properties.json), as passed; PropertiesRefused is why the
	// folder's file is refused ("" when it is not): its load fails so.
	Properties        map[string]string
	PropertiesRefused string
}

// GenAIRenders is ModelDetails.PromptRenderer for a model whose chat
// template npud does not reproduce: GenAI renders its prompts, so npud
// learns their size only from a generation.
const GenAIRenders = "genai"

// GenAIRendersPrompts reports whether GenAI renders the model's prompts
// (see GenAIRenders): no engine counts them before generating.
func (d ModelDetails) GenAIRendersPrompts() bool { return d.PromptRenderer == GenAIRenders }

// Message is one chat turn.
type Message struct {
	Role    string
	Content string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID and ToolName say which call a "tool" message answers
	// (OpenAI names the id, Ollama the function).
	ToolCallID string
	ToolName   string
	// Images go with a user message to a vision model.
	Images []Image
}

// Equal reports whether two messages say the same (GenAI's test for a
// conversation that continues the one in its cache).
func (m Message) Equal(o Message) bool {
	return m.Role == o.Role && m.Content == o.Content && m.ToolCallID == o.ToolCallID && m.ToolName == o.ToolName &&
		slices.Equal(m.ToolCalls, o.ToolCalls) &&
		slices.EqualFunc(m.Images, o.Images, func(a, b Image) bool {
			return a.Width == b.Width && a.Height == b.Height && bytes.Equal(a.RGB, b.RGB)
		})
}

// Image is a decoded picture: RGB, three bytes a pixel, row by row.
type Image struct {
	Width, Height int
	RGB           []byte
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of its arguments (an object); nil
	// when it takes none.
	Parameters json.RawMessage
}

// ToolCall is a call a model made: its arguments are JSON text, as the
// model wrote them.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolCallDelta is a piece of a tool call the model is making, in the
// order a client assembles it (OpenAI's delta.tool_calls): the first piece
// of a call carries its ID and Name, the following ones further pieces of
// its Arguments (JSON text, as the model writes it), the last one Done.
type ToolCallDelta struct {
	Index     int
	ID        string // first piece only
	Name      string // first piece only
	Arguments string
	Done      bool // the call is complete
}

// ToolChoice says whether and which tools the model should call.
type ToolChoice struct {
	// Mode is ToolChoiceAuto (the model decides; also ""), ToolChoiceNone,
	// ToolChoiceRequired or ToolChoiceFunction (the one named in Name).
	Mode string
	Name string
}

const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
	ToolChoiceFunction = "function"
)

// Sampling holds the sampling parameters of a request. Nil pointers mean
// "the model's default".
type Sampling struct {
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	Seed              *int64
	RepetitionPenalty *float64
	PresencePenalty   *float64
	FrequencyPenalty  *float64
}

// Request is one generation request, already validated by the API layer.
// Exactly one of Messages and Prompt is set.
type Request struct {
	Model    string
	Messages []Message
	Prompt   string
	Sampling Sampling
	// MaxTokens bounds the completion; 0 means up to the context length.
	// One larger than the room the prompt leaves is lowered to that room
	// (CompletionLimit), not refused.
	MaxTokens int
	// ContextLength, when positive, is the request's own context (Ollama's
	// num_ctx): prompt and completion fit within it as within the model's,
	// which bounds it.
	ContextLength int
	// Stop strings end the completion; they are matched by the bridge across
	// chunk boundaries and never appear in the output.
	Stop []string
	// Think turns the model's reasoning on or off (nil: the model's
	// default); ThinkLevel is low, medium or high for models that take
	// levels ("" otherwise). Reasoning comes back apart from the answer.
	Think      *bool
	ThinkLevel string
	// Tools the model may call (the chat template renders them), how it
	// should choose, and SingleToolCall when at most one call is wanted
	// (OpenAI's parallel_tool_calls: false): the answer ends after it.
	Tools          []Tool
	ToolChoice     ToolChoice
	SingleToolCall bool
	// Format, when set, is the structured output the answer must be: any
	// JSON object, or a document valid against a JSON Schema (OpenAI's
	// response_format and text.format, Ollama's format, Anthropic's
	// output_config.format).
	Format *Format
	// Timeout, when positive, bounds the whole generation: at the deadline the
	// engine is stopped and the stream finishes with FinishLength.
	Timeout time.Duration
	// DropOldestTurns lets an engine that finds the messages over its
	// context drop the oldest turns (never system messages, never the last
	// message) until they fit, as Ollama does with num_ctx. Without it the
	// request fails with ErrContextLength (OpenAI's behaviour).
	DropOldestTurns bool
	// KeepAlive is how long the model stays loaded after this request: nil
	// means the pool's default, negative forever, zero unload at once.
	KeepAlive *time.Duration
	// Tenant is who the generation counts against (the API key's name):
	// the router's per-tenant stream cap applies to it wherever the
	// request came from, for as long as the generation runs.
	Tenant string
	// MayUnpin: the caller may unload a preloaded model with a KeepAlive
	// of 0 (an admin key, or a server without keys); for anyone else a
	// preloaded model's keep-alive does not change.
	MayUnpin bool
	// Release, when set, is called once the pool is done with the
	// request: its generation ended, however (the decoded images' share
	// of the daemon's image memory goes back). A request the router
	// refused is released by its caller.
	Release func() `json:"-"`
}

// Format is a structured output a request asks for.
type Format struct {
	// Type is FormatJSONObject (any JSON object) or FormatJSONSchema.
	Type string
	// Name is the schema's name where the API gives one (OpenAI's
	// json_schema.name), for errors and the prompt.
	Name string
	// Schema is the JSON Schema the answer must be valid against
	// (FormatJSONSchema), as the client sent it.
	Schema json.RawMessage
	// Strict: the client asked for strict adherence (OpenAI's strict).
	// npud holds the answer to a schema it accepts either way; the flag is
	// passed on to upstreams.
	Strict bool
}

// The kinds of Format.
const (
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// FinishReason says why a generation ended.
type FinishReason string

const (
	FinishStop      FinishReason = "stop"
	FinishLength    FinishReason = "length"
	FinishCancelled FinishReason = "cancelled"
	// FinishToolCalls: the model ended its answer with tool calls.
	FinishToolCalls FinishReason = "tool_calls"
)

// Timings are the durations of a generation's phases.
type Timings struct {
	// Queue is the time spent waiting for the engine (filled by the pool).
	Queue time.Duration
	// Load is the time spent loading the model for this request (filled by
	// the pool; zero when it was loaded already).
	Load time.Duration
	// Prefill is from the start of Generate to the first token.
	Prefill time.Duration
	// Decode is from the first token to the end of generation.
	Decode time.Duration
}

// Result is what an engine reports when a generation ends.
type Result struct {
	FinishReason FinishReason
	PromptTokens int // the whole prompt
	// CachedPromptTokens is the part of PromptTokens the engine did not
	// prefill: it was in its cache from the conversation's earlier turn.
	CachedPromptTokens int
	CompletionTokens   int
	// MaxTokensClamped is the completion limit the generation ran with
	// when the request's was larger than the room its prompt left in the
	// context (CompletionLimit); 0 when it ran with its own.
	MaxTokensClamped int
	// FormatResumes is how often a structured answer was resumed after
	// its schema refused what the model wrote (the OpenVINO engine's
	// constrained loop); 0 otherwise.
	FormatResumes int
	Timings       Timings
	// StopSequence is the stop string that ended the output (set by the
	// bridge; Anthropic's stop_sequence), "" when none did.
	StopSequence string
}
