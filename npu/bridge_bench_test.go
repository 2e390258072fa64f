package npu

import (
	"context"
	"testing"
)

// benchmarkBridge measures one chunk's way through the bridge: the engine's
// sink call (UTF-8 check, stop matching, append, signal) and the writer's
// Next that takes it.
func benchmarkBridge(b *testing.B, stops []string) {
	s := newStream(context.Background(), &Request{Stop: stops}, StreamLimits{MaxPendingBytes: 1 << 20})
	defer s.Close()
	s.begin()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if s.sink(" processing") != Running {
			b.Fatal("the bridge stopped the engine")
		}
		if _, err := s.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBridgeChunk(b *testing.B) { benchmarkBridge(b, nil) }

func BenchmarkBridgeChunkFourStops(b *testing.B) {
	benchmarkBridge(b, []string{"</s>", "<|im_end|>", "\n\nUser:", "###"})
}

func BenchmarkStopMatcher(b *testing.B) {
	m := stopMatcher{stops: []string{"</s>", "<|im_end|>", "\n\nUser:", "###"}}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.push(" processing <")
	}
}
