package npu

import (
	"testing"
)

var benchStops = []string{"</s>", "<|im_end|>", "\n\nUser:", "###"}

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
