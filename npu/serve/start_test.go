package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// A refused Start gives no stream at all: an npu.Stream holding a nil
// *Stream would not compare equal to nil, and a caller that checks the
// stream rather than the error would read from it. Each way the router
// refuses, before and inside the pool.
func TestRefusedStartGivesANilStream(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	e := &fakeEngine{script: []step{{text: "a", gate: gate}}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 0})
	start(t, r, &npu.Request{Model: "m"}) // takes the one slot; nothing may queue
	for _, tc := range []struct {
		name string
		req  *npu.Request
		want error
	}{
		{"unknown model (the router)", &npu.Request{Model: "nope"}, npu.ErrModelNotFound},
		{"queue full (the pool)", &npu.Request{Model: "m"}, npu.ErrQueueFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := r.Start(tc.req)
			require.ErrorIs(t, err, tc.want)
			assert.True(t, s == nil, "a refused start returned a stream: %#v", s)
		})
	}
}
