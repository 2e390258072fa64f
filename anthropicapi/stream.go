package anthropicapi

import (
	"encoding/json"
	"strconv"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/errclass"
)

// framing is the Messages API's event stream: message_start at the
// commit; each content block opened with content_block_start, filled with
// deltas (text_delta, thinking_delta, input_json_delta) and closed with
// content_block_stop before the next opens; message_delta with the stop
// reason and usage, then message_stop; ping as the heartbeat; an error
// after the commit is an error event, which ends the stream.
type framing struct {
	a         *API
	id, model string
	block     string // the open block's type; "" when none is open
	index     int    // the open block's index, or the next one's
	buf       []byte // Text's frames, reused: each is written before the next is made
}

var pingFrame = []byte("event: ping\ndata: {\"type\":\"ping\"}\n\n")

func (f *framing) ContentType() string { return "text/event-stream" }

// event appends one SSE event; its data are values that always encode.
func event(dst []byte, name string, data any) []byte {
	b, _ := json.Marshal(data)
	dst = append(dst, "event: "+name+"\ndata: "...)
	dst = append(dst, b...)
	return append(dst, '\n', '\n')
}

// Open is message_start. The prompt's token count is known only at the
// end, so it comes in message_delta's usage.
func (f *framing) Open() []byte {
	return event(nil, "message_start", map[string]any{"type": "message_start",
		"message": messageObject{ID: f.id, Type: "message", Role: "assistant", Model: f.model, Content: []contentBlock{}}})
}

func (f *framing) closeBlock(dst []byte) []byte {
	if f.block == "" {
		return dst
	}
	dst = event(dst, "content_block_stop", map[string]any{"type": "content_block_stop", "index": f.index})
	f.block = ""
	f.index++
	return dst
}

// openBlock closes the open block unless it is of type typ, and opens one
// of that type with start as content_block_start's block.
func (f *framing) openBlock(dst []byte, typ string, start contentBlock) []byte {
	if f.block == typ && typ != "tool_use" {
		return dst
	}
	dst = f.closeBlock(dst)
	f.block = typ
	return event(dst, "content_block_start", map[string]any{"type": "content_block_start", "index": f.index, "content_block": start})
}

// delta appends a content_block_delta of kind (text_delta and the
// others) whose field holds value. It is the hot path: encoded by hand
// into the framing's buffer.
func (f *framing) delta(dst []byte, kind, field, value string) []byte {
	v, _ := json.Marshal(value) // a string always encodes
	dst = append(dst, `event: content_block_delta
data: {"type":"content_block_delta","index":`...)
	dst = strconv.AppendInt(dst, int64(f.index), 10)
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, kind...)
	dst = append(dst, `","`...)
	dst = append(dst, field...)
	dst = append(dst, `":`...)
	dst = append(dst, v...)
	return append(dst, "}}\n\n"...)
}

// Text frames an event into the framing's buffer, which the relay writes
// before it asks for the next frame.
func (f *framing) Text(ev *npu.Event) []byte {
	out := f.buf[:0]
	if ev.Reasoning != "" {
		out = f.openBlock(out, "thinking", thinkingBlock(""))
		out = f.delta(out, "thinking_delta", "thinking", ev.Reasoning)
	}
	if ev.Text != "" {
		out = f.openBlock(out, "text", textBlock(""))
		out = f.delta(out, "text_delta", "text", ev.Text)
	}
	for _, d := range ev.ToolCalls {
		if d.ID != "" {
			out = f.openBlock(out, "tool_use", contentBlock{Type: "tool_use", ID: d.ID, Name: d.Name, Input: json.RawMessage("{}")})
		}
		if d.Arguments != "" && f.block == "tool_use" {
			out = f.delta(out, "input_json_delta", "partial_json", d.Arguments)
		}
	}
	f.buf = out
	if len(out) == 0 {
		return nil // nothing to send (a piece that only completes a call)
	}
	return out
}

// Heartbeat is Anthropic's ping event, also while the model loads (the
// event has no field to say how the load goes).
func (f *framing) Heartbeat(*npu.LoadStatus) []byte { return pingFrame }

// Terminator: the Messages API has none beyond message_stop (no journal
// replays this stream, so it is never asked for alone).
func (f *framing) Terminator() []byte { return nil }

func (f *framing) End(res npu.Result) ([]byte, string) {
	out := f.closeBlock(nil)
	reason := StopReason(res)
	out = event(out, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": stopSequence(res)},
		"usage": usageOf(res)})
	out = event(out, "message_stop", map[string]string{"type": "message_stop"})
	return out, string(res.FinishReason)
}

// Fail is the in-band error event after the commit; it ends the stream.
func (f *framing) Fail(err error) ([]byte, string, error) {
	e := f.a.toError(err)
	if e.Status == errclass.StatusClientClosed {
		return nil, "", err // nobody to tell
	}
	return event(nil, "error", e), "", err
}
