package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// The result names the stop string that ended the output (Anthropic's
// stop_sequence), however the engine's chunks cut it; no stop string, no
// name.
func TestResultNamesTheStopSequence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		stops  []string
		want   string
		text   string
		reason npu.FinishReason
	}{
		{"split across chunks", []string{"ab", "c E", "ND tail"}, []string{"END", "STOP"}, "END", "abc ", npu.FinishStop},
		{"the first complete wins", []string{"xSTOPEND"}, []string{"END", "STOP"}, "STOP", "x", npu.FinishStop},
		{"at the very end", []string{"ab", "END"}, []string{"END"}, "END", "ab", npu.FinishStop},
		{"none matched", []string{"ab", "cd"}, []string{"END"}, "", "abcd", npu.FinishStop},
		{"no stop strings", []string{"ab"}, nil, "", "ab", npu.FinishStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{script: texts(tc.chunks...)}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
			s := start(t, r, &npu.Request{Model: "m", Stop: tc.stops})
			text, final, err := drain(t, s)
			require.NoError(t, err)
			assert.Equal(t, tc.text, text)
			assert.Equal(t, tc.reason, final.Result.FinishReason)
			assert.Equal(t, tc.want, final.Result.StopSequence)
		})
	}
}
