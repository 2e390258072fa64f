package anthropicapi

import (
	"testing"

	"github.com/npud/npud/npu"
)

// BenchmarkFramingText is the hot path: one text event framed as a
// content_block_delta.
func BenchmarkFramingText(b *testing.B) {
	f := &framing{id: "msg_x", model: "m"}
	f.Text(&npu.Event{Text: "start"})
	ev := &npu.Event{Text: " token"}
	b.ReportAllocs()
	for b.Loop() {
		f.Text(ev)
	}
}
