package openaiapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/streamwriter"
)

// sseWriter writes an OpenAI event stream: `data: <json>\n\n` frames, no
// event/id/retry lines, a flush per event, and nothing after [DONE].
type sseWriter struct{ *streamwriter.Writer }

func newSSEWriter(w http.ResponseWriter, writeTimeout time.Duration) sseWriter {
	return sseWriter{streamwriter.New(w, writeTimeout)}
}

var (
	heartbeatFrame = []byte(": ping\n\n")
	doneFrame      = []byte("data: [DONE]\n\n")
)

// chunkEncoder writes the chunks of one completion. Every chunk carries the
// same id, object, created and model, so that prefix is encoded once.
type chunkEncoder struct {
	chat   bool
	head   []byte // {"id":…,"object":…,"created":…,"model":…
	choice []byte // head + ,"choices":[{"index":N,
	buf    []byte
	// functions: the request declared the legacy functions, so a call
	// goes out as delta.function_call and ends with "function_call".
	functions bool
}

func newChunkEncoder(ep endpoint, id string, created int64, model string) *chunkEncoder {
	object := "text_completion" // also for stream chunks, as OpenAI sends it
	if ep == chatEndpoint {
		object = "chat.completion.chunk"
	}
	head := []byte(`{"id":`)
	head = openaiwire.AppendJSONString(head, id)
	head = append(head, `,"object":"`+object+`","created":`...)
	head = strconv.AppendInt(head, created, 10)
	head = append(head, `,"model":`...)
	head = openaiwire.AppendJSONString(head, model)
	e := &chunkEncoder{chat: ep == chatEndpoint, head: head}
	e.setChoice(0)
	return e
}

// setChoice makes the chunks that follow the choice index's (n > 1).
func (e *chunkEncoder) setChoice(index int) {
	e.choice = append(append(e.choice[:0], e.head...), `,"choices":[{"index":`...)
	e.choice = append(strconv.AppendInt(e.choice, int64(index), 10), ',')
}

// role is the first chunk of a chat stream.
func (e *chunkEncoder) role() []byte {
	e.buf = append(append(e.buf[:0], "data: "...), e.choice...)
	e.buf = append(e.buf, `"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	return e.buf
}

// text is a content chunk; it is the hot path and allocates nothing once
// the buffer has grown. The model's reasoning rides in reasoning_content,
// as vLLM and DeepSeek send it, never in content.
func (e *chunkEncoder) text(reasoning, s string) []byte {
	e.buf = append(append(e.buf[:0], "data: "...), e.choice...)
	if e.chat {
		e.buf = append(e.buf, `"delta":{`...)
		if reasoning != "" {
			e.buf = append(e.buf, `"reasoning_content":`...)
			e.buf = openaiwire.AppendJSONString(e.buf, reasoning)
			if s != "" {
				e.buf = append(e.buf, ',')
			}
		}
		if s != "" || reasoning == "" {
			e.buf = append(e.buf, `"content":`...)
			e.buf = openaiwire.AppendJSONString(e.buf, s)
		}
		e.buf = append(e.buf, '}')
	} else {
		e.buf = append(e.buf, `"text":`...)
		e.buf = openaiwire.AppendJSONString(e.buf, s)
		if reasoning != "" {
			e.buf = append(e.buf, `,"reasoning_content":`...)
			e.buf = openaiwire.AppendJSONString(e.buf, reasoning)
		}
	}
	e.buf = append(e.buf, `,"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	return e.buf
}

// toolCalls is a chunk with pieces of tool calls (nil when none is
// worth sending).
func (e *chunkEncoder) toolCalls(pieces []npu.ToolCallDelta) []byte {
	deltas := openaichat.ToolCallDeltas(pieces)
	if len(deltas) == 0 {
		return nil
	}
	if e.functions {
		return e.functionCall(deltas)
	}
	b, _ := json.Marshal(deltas) // strings and numbers: always encodes
	e.buf = append(append(e.buf[:0], "data: "...), e.choice...)
	e.buf = append(e.buf, `"delta":{"tool_calls":`...)
	e.buf = append(e.buf, b...)
	e.buf = append(e.buf, `},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	return e.buf
}

// functionCall is the legacy form of tool-call pieces: delta.function_call,
// its name on the first piece only (clients concatenate what repeats). A
// legacy answer holds one call (the request asks for one).
func (e *chunkEncoder) functionCall(deltas []openaiwire.ToolCallDelta) []byte {
	e.buf = e.buf[:0]
	for _, d := range deltas {
		if d.Index > 0 {
			continue
		}
		b, _ := json.Marshal(d.Function) // strings: always encodes
		e.buf = append(append(e.buf, "data: "...), e.choice...)
		e.buf = append(e.buf, `"delta":{"function_call":`...)
		e.buf = append(e.buf, b...)
		e.buf = append(e.buf, `},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	if len(e.buf) == 0 {
		return nil
	}
	return e.buf
}

// finish is the one chunk with a finish_reason.
func (e *chunkEncoder) finish(reason string) []byte {
	e.buf = append(append(e.buf[:0], "data: "...), e.choice...)
	if e.chat {
		e.buf = append(e.buf, `"delta":{}`...)
	} else {
		e.buf = append(e.buf, `"text":""`...)
	}
	e.buf = append(e.buf, `,"logprobs":null,"finish_reason":`...)
	e.buf = openaiwire.AppendJSONString(e.buf, reason)
	e.buf = append(e.buf, "}]}\n\n"...)
	return e.buf
}

// usage is the chunk sent when the request asked for include_usage.
func (e *chunkEncoder) usage(u openaiwire.Usage) []byte {
	e.buf = append(append(e.buf[:0], "data: "...), e.head...)
	e.buf = append(e.buf, `,"choices":[],"usage":{"prompt_tokens":`...)
	e.buf = strconv.AppendInt(e.buf, int64(u.PromptTokens), 10)
	e.buf = append(e.buf, `,"completion_tokens":`...)
	e.buf = strconv.AppendInt(e.buf, int64(u.CompletionTokens), 10)
	e.buf = append(e.buf, `,"total_tokens":`...)
	e.buf = strconv.AppendInt(e.buf, int64(u.TotalTokens), 10)
	if u.PromptDetails != nil {
		e.buf = append(e.buf, `,"prompt_tokens_details":{"cached_tokens":`...)
		e.buf = strconv.AppendInt(e.buf, int64(u.PromptDetails.CachedTokens), 10)
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, "}}\n\n"...)
	return e.buf
}

// errorFrame is the in-band error of a stream that already began.
func errorFrame(apiErr *Error) []byte {
	b, _ := apiErr.MarshalJSON() // a struct of strings cannot fail to encode
	return append(append([]byte("data: "), b...), "\n\n"...)
}
