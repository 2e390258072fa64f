package anthropicapi

import (
	"flag"
	"log/slog"
	"testing"

	"github.com/npud/npud/npu/serve/servetest"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/relay/relaytest"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the framing transcripts in testdata/framing")

// The exact bytes of the Messages API's event stream for scripted
// generations: thinking, text and tool_use blocks, pings, each way a
// stream ends, an error after the first byte and a resume after the end
// (testdata/framing; go test -update rewrites them).
func TestFramingTranscripts(t *testing.T) {
	a := New(servetest.IdleRouter(t), Config{}, slog.New(slog.DiscardHandler))
	relaytest.Check(t, "testdata/framing", *updateTranscripts,
		relaytest.Framer{Name: "messages.sse", New: func(_ *testing.T, src *relaytest.Source) (relay.Framing, relay.Source) {
			return &framing{a: a, id: "msg_golden", model: "sim"}, src
		}},
	)
}
