package openaiapi

import (
	"encoding/json"
	"testing"
)

// benchChunk is the same content chunk built with encoding/json, to compare.
type benchChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []benchChoice `json:"choices"`
}

type benchChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

const (
	benchID    = "chatcmpl-0123456789abcdef01234567"
	benchToken = " processing"
)

// BenchmarkSSEChunkEncode is the hot path: one content chunk, framed.
func BenchmarkSSEChunkEncode(b *testing.B) {
	enc := newChunkEncoder(chatEndpoint, benchID, 1700000000, "sim")
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(enc.text("", benchToken))
	}
	b.SetBytes(int64(n))
}

// BenchmarkSSEChunkJSONMarshal is the same frame through encoding/json.
func BenchmarkSSEChunkJSONMarshal(b *testing.B) {
	c := benchChunk{ID: benchID, Object: "chat.completion.chunk", Created: 1700000000, Model: "sim",
		Choices: make([]benchChoice, 1)}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		c.Choices[0].Delta.Content = benchToken
		body, err := json.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		frame := make([]byte, 0, len(body)+8)
		frame = append(append(append(frame, "data: "...), body...), "\n\n"...)
		n = len(frame)
	}
	b.SetBytes(int64(n))
}

// TestBenchmarkFramesAgree keeps the comparison honest: both benchmarks
// build the same bytes.
func TestBenchmarkFramesAgree(t *testing.T) {
	enc := newChunkEncoder(chatEndpoint, benchID, 1700000000, "sim")
	c := benchChunk{ID: benchID, Object: "chat.completion.chunk", Created: 1700000000, Model: "sim",
		Choices: make([]benchChoice, 1)}
	c.Choices[0].Delta.Content = benchToken
	body, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(enc.text("", benchToken)), "data: "+string(body)+"\n\n"; got != want {
		t.Fatalf("encoder frame\n%s\ndiffers from encoding/json's\n%s", got, want)
	}
}
