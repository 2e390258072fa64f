package sim

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/npu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func seed(n int64) *int64 { return &n }

// recorder is a sink that keeps every chunk and answers from a script.
type recorder struct {
	mu     sync.Mutex
	chunks []string
	answer func(n int) npu.Status // n: 1-based call number
}

func (r *recorder) sink(text string) npu.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = append(r.chunks, text)
	if r.answer == nil {
		return npu.Running
	}
	return r.answer(len(r.chunks))
}

func TestTextIsDeterministic(t *testing.T) {
	assert.Equal(t, Text(1, "p"), Text(1, "p"))
	assert.NotEqual(t, Text(1, "p"), Text(2, "p"), "the seed changes the text")
	assert.NotEqual(t, Text(1, "p"), Text(1, "q"), "the prompt changes the text")
	for s := range int64(50) {
		n := len(Tokens(s, "x"))
		assert.True(t, n >= 32 && n < 128, "length %d", n)
		assert.True(t, utf8.ValidString(Text(s, "x")))
	}
}

func TestGenerateStreamsTheTokens(t *testing.T) {
	e := New(Config{})
	tests := []struct {
		name      string
		maxTokens int
		reason    npu.FinishReason
	}{
		{"natural end", 0, npu.FinishStop},
		{"max tokens", 7, npu.FinishLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &npu.Request{Model: ModelID, Prompt: "hello", MaxTokens: tc.maxTokens, Sampling: npu.Sampling{Seed: seed(3)}}
			var rec recorder
			res, err := e.Generate(context.Background(), req, rec.sink)
			require.NoError(t, err)
			want := Tokens(3, "hello")
			if tc.maxTokens > 0 {
				want = want[:tc.maxTokens]
			}
			assert.Equal(t, want, rec.chunks)
			assert.Equal(t, tc.reason, res.FinishReason)
			assert.Equal(t, len(want), res.CompletionTokens)
			assert.Equal(t, CountTokens("hello"), res.PromptTokens)
		})
	}
}

func TestGenerateFlushesOnceAfterStopOrCancel(t *testing.T) {
	for _, st := range []npu.Status{npu.Stop, npu.Cancel} {
		t.Run(st.String(), func(t *testing.T) {
			rec := recorder{answer: func(n int) npu.Status {
				if n >= 3 {
					return st
				}
				return npu.Running
			}}
			res, err := New(Config{}).Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: "p"}, rec.sink)
			require.NoError(t, err)
			assert.Len(t, rec.chunks, 4, "three tokens, then the flush")
			assert.Equal(t, Tokens(0, "p")[:4], rec.chunks)
			if st == npu.Cancel {
				assert.Equal(t, npu.FinishCancelled, res.FinishReason)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Run("split runes", func(t *testing.T) {
		e := New(Config{Faults: func(*npu.Request) Fault { return Fault{SplitRunes: true} }})
		var rec recorder
		// A seed whose text has a multi-byte character.
		s := int64(0)
		for !strings.ContainsFunc(Text(s, "p"), func(r rune) bool { return r > 127 }) {
			s++
		}
		_, err := e.Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: "p", Sampling: npu.Sampling{Seed: &s}}, rec.sink)
		require.NoError(t, err)
		split := 0
		for _, c := range rec.chunks {
			if !utf8.ValidString(c) {
				split++
			}
		}
		assert.Positive(t, split, "some callbacks carry half a character")
		assert.Equal(t, Text(s, "p"), strings.Join(rec.chunks, ""))
	})
	t.Run("error at token", func(t *testing.T) {
		e := New(Config{Faults: func(*npu.Request) Fault { return Fault{ErrorAtToken: 5} }})
		var rec recorder
		_, err := e.Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: "p"}, rec.sink)
		var engineErr *npu.EngineError
		require.ErrorAs(t, err, &engineErr)
		assert.Equal(t, Tokens(0, "p")[:4], rec.chunks)
	})
	t.Run("stall until cancelled", func(t *testing.T) {
		e := New(Config{Faults: func(*npu.Request) Fault { return Fault{StallAtToken: 2} }})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var rec recorder
		go func() {
			defer close(done)
			_, _ = e.Generate(ctx, &npu.Request{Model: ModelID, Prompt: "p"}, rec.sink)
		}()
		select {
		case <-done:
			t.Fatal("a stalled generation returned by itself")
		case <-time.After(50 * time.Millisecond):
		}
		cancel()
		<-done
	})
}

func TestContextLength(t *testing.T) {
	e := New(Config{ContextLength: 100})
	_, err := e.Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: strings.Repeat("x", 400), MaxTokens: 1}, (&recorder{}).sink)
	require.ErrorIs(t, err, npu.ErrContextLength)
	assert.False(t, errors.Is(err, npu.ErrQueueFull))
}

func TestDescribesItselfAsSimulated(t *testing.T) {
	e := New(Config{})
	assert.True(t, e.Simulated())
	require.Len(t, e.Models(), 1)
	assert.Equal(t, "sim", e.Models()[0].ID)
	assert.Contains(t, e.Models()[0].OwnedBy, "simulated")
	assert.Equal(t, 32768, e.Models()[0].ContextLength)
}
