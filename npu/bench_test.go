package npu

import (
	"context"
	"testing"
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
			s := newStream(context.Background(), &Request{Stop: bc.stops}, StreamLimits{MaxPendingBytes: 1 << 20}, nil)
			defer s.Close()
			s.begin("")
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if s.sink(bc.chunks[i%len(bc.chunks)]) != Running {
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

func BenchmarkStopMatcher(b *testing.B) {
	cases := []struct {
		name  string
		chunk string
	}{
		{"no-prefix", " processing"},
		{"held-prefix", " processing <"},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			m := stopMatcher{stops: benchStops}
			b.ReportAllocs()
			for b.Loop() {
				if _, stopped := m.push(bc.chunk); stopped {
					b.Fatal("no stop string in the input")
				}
			}
		})
	}
}

func BenchmarkUTF8Assembler(b *testing.B) {
	cases := []struct {
		name   string
		chunks []string
	}{
		{"valid", []string{" naïve café"}},
		{"split-runes", []string{" 日\xe6", "\x9c\xac"}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			var a utf8Assembler
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = a.push(bc.chunks[i%len(bc.chunks)])
				i++
			}
		})
	}
}
