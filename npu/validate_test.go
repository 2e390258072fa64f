package npu

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequestValidateHasGenAIsBounds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k := func(v int) *int { return &v }
	for _, tc := range []struct {
		name  string
		req   Request
		param string // "" = valid
	}{
		{"defaults", Request{Prompt: "hi"}, ""},
		{"edges GenAI accepts", Request{Prompt: "hi", Sampling: Sampling{Temperature: f(0), TopP: f(1), MinP: f(0),
			RepetitionPenalty: f(0.01), PresencePenalty: f(-2), FrequencyPenalty: f(2), TopK: k(0)}}, ""},
		{"top_p 0", Request{Prompt: "hi", Sampling: Sampling{TopP: f(0)}}, "top_p"},
		{"top_p over 1", Request{Prompt: "hi", Sampling: Sampling{TopP: f(1.01)}}, "top_p"},
		{"min_p 1", Request{Prompt: "hi", Sampling: Sampling{MinP: f(1)}}, "min_p"},
		{"repetition_penalty 0", Request{Prompt: "hi", Sampling: Sampling{RepetitionPenalty: f(0)}}, "repetition_penalty"},
		{"presence_penalty", Request{Prompt: "hi", Sampling: Sampling{PresencePenalty: f(2.5)}}, "presence_penalty"},
		{"frequency_penalty", Request{Prompt: "hi", Sampling: Sampling{FrequencyPenalty: f(-3)}}, "frequency_penalty"},
		{"temperature NaN", Request{Prompt: "hi", Sampling: Sampling{Temperature: f(math.NaN())}}, "temperature"},
		{"negative temperature", Request{Prompt: "hi", Sampling: Sampling{Temperature: f(-1)}}, "temperature"},
		// The ranges every API serves on top of GenAI's, once, here.
		{"edges every API accepts", Request{Prompt: "hi", Sampling: Sampling{Temperature: f(2), RepetitionPenalty: f(100)}}, ""},
		{"temperature over 2", Request{Prompt: "hi", Sampling: Sampling{Temperature: f(2.5)}}, "temperature"},
		{"repetition_penalty over 100", Request{Prompt: "hi", Sampling: Sampling{RepetitionPenalty: f(100.5)}}, "repetition_penalty"},
		{"negative top_k", Request{Prompt: "hi", Sampling: Sampling{TopK: k(-1)}}, "top_k"},
		{"negative max_tokens", Request{Prompt: "hi", MaxTokens: -1}, "max_tokens"},
		{"NUL in prompt", Request{Prompt: "a\x00b"}, "prompt"},
		{"NUL in a message", Request{Messages: []Message{{Role: "user", Content: "ok"}, {Role: "user", Content: "x\x00"}}}, "messages[1].content"},
		{"NUL in a stop string", Request{Prompt: "hi", Stop: []string{"\x00"}}, "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			if tc.param == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidRequest)
			var ie *InvalidRequestError
			require.True(t, errors.As(err, &ie))
			assert.Equal(t, tc.param, ie.Param)
			assert.Contains(t, ie.Message, tc.param)
		})
	}
}
