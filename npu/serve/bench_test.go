package serve

import (
	"context"
	"testing"

	"github.com/npud/npud/npu"
)

var benchStops = []string{"</s>", "<|im_end|>", "\n\nUser:", "###"}

// BenchmarkBridgeChunk measures one chunk's way through the bridge: the
// engine's sink call (UTF-8 check, stop matching, append, signal) and the
// writer's Next that takes it.
func BenchmarkBridgeChunk(b *testing.B) {
	cases := []struct {
		name   string
		stops  []string
		chunks []string
	}{
		{"ascii", nil, []string{" processing"}},
		{"ascii/4-stops", benchStops, []string{" processing"}},
		{"ascii/4-stops/held-prefix", benchStops, []string{" processing <", "| thinking"}},
		{"split-runes", nil, []string{" 日\xe6", "\x9c\xac"}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			s := newStream(context.Background(), &npu.Request{Stop: bc.stops}, StreamLimits{MaxPendingBytes: 1 << 20}, nil)
			defer s.Close()
			s.begin("")
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if s.sink(bc.chunks[i%len(bc.chunks)]) != npu.Running {
					b.Fatal("the bridge stopped the engine")
				}
				i++
				if _, err := s.Next(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
