package relay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/reqinfo"
)

type events []npu.Event

type source struct {
	evs  events
	fail error // after the events
}

func (s *source) Next(context.Context) (npu.Event, error) {
	if len(s.evs) == 0 {
		return npu.Event{}, s.fail
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}

type writer struct {
	committed   string
	out         strings.Builder
	failAfter   int // writes before they start failing; <0: never
	writes      int
	commitCount int
}

func (w *writer) Committed() bool  { return w.committed != "" }
func (w *writer) Commit(ct string) { w.committed = ct; w.commitCount++ }
func (w *writer) Write(frame []byte, _ bool) error {
	if w.failAfter >= 0 && w.writes >= w.failAfter {
		return errors.New("broken pipe")
	}
	w.writes++
	w.out.Write(frame)
	return nil
}

type framing struct{}

func (framing) ContentType() string { return "text/test" }
func (framing) Open() []byte        { return []byte("<open>") }
func (framing) Text(ev *npu.Event) []byte {
	r, t := ev.Reasoning, ev.Text
	if r != "" {
		return []byte("[(" + r + ")" + t + "]")
	}
	return []byte("[" + t + "]")
}
func (framing) Heartbeat(*npu.LoadStatus) []byte { return []byte(".") }
func (framing) Terminator() []byte               { return []byte("<end>") }
func (framing) End(npu.Result) ([]byte, string) {
	return []byte("<done><end>"), "stop"
}
func (framing) Fail(err error) ([]byte, string, error) {
	return []byte("<error:" + err.Error() + "><end>"), "", err
}

func TestRun(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		src        *source
		failAfter  int
		want       string
		wantEarly  bool
		wantErr    error
		wantReason string
		wantTTFT   bool
		wantTokens int // what the access log says the client received
	}{
		{"whole stream", &source{evs: events{{Text: "a"}, {Heartbeat: true}, {Text: "b"}, {Done: true, Result: npu.Result{CompletionTokens: 2}}}},
			-1, "<open>[a].[b]<done><end>", false, nil, "stop", true, 2},
		{"failure before the first event is the protocol's HTTP error", &source{fail: boom}, -1, "", true, nil, "", false, 0},
		{"failure after it is in-band, with the terminator", &source{evs: events{{Text: "a"}}, fail: boom},
			-1, "<open>[a]<error:boom><end>", false, boom, "", true, 0},
		{"a reader with every event gets the terminator", &source{fail: ErrAfterEnd}, -1, "<end>", false, nil, "", false, 0},
		// Issue 17: the access log counts what an aborted client received
		// (it said 0: the count came only with the end).
		{"a client that cannot be written to ends it", &source{evs: events{{Text: "a", Tokens: 1}, {Text: "bc", Tokens: 2}, {Text: "d", Tokens: 1}}}, 3,
			"<open>[a][bc]", false, reqinfo.ErrWrite, "", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &writer{failAfter: tc.failAfter}
			early := false
			report := Run(t.Context(), w, tc.src, framing{}, func(error) { early = true })
			assert.Equal(t, tc.want, w.out.String())
			assert.Equal(t, tc.wantEarly, early)
			assert.Equal(t, !tc.wantEarly, w.Committed(), "committed unless it failed first")
			assert.LessOrEqual(t, w.commitCount, 1)
			if tc.wantErr != nil {
				assert.ErrorIs(t, report.Err, tc.wantErr)
			} else {
				assert.NoError(t, report.Err)
			}
			assert.Equal(t, tc.wantReason, report.FinishReason)
			assert.Equal(t, tc.wantTTFT, !report.FirstText.IsZero())
			assert.Equal(t, tc.wantTokens, report.Tokens)
			// What the access log and the metrics then record.
			info := &reqinfo.Info{Start: time.Now().Add(-time.Millisecond)}
			info.Record(report)
			assert.Equal(t, tc.wantReason, info.FinishReason)
			assert.Equal(t, tc.wantTTFT, info.TTFT > 0)
			assert.Equal(t, tc.wantTokens, info.TokensOut)
			assert.Equal(t, report.Err, info.Err)
		})
	}
}
