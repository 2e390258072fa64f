package wsapi

import (
	"context"
	"flag"
	"testing"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/relay/relaytest"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the framing transcripts in testdata/framing")

// The exact messages of npud's WebSocket for one request's scripted
// generations: tokens with their journal index, reasoning, tool-call
// pieces, load status, each way a generation ends, an error after the
// first token and a resume after the end (testdata/framing; go test
// -update rewrites them). A line of a transcript is a message.
func TestFramingTranscripts(t *testing.T) {
	relaytest.Check(t, "testdata/framing", *updateTranscripts,
		relaytest.Framer{Name: "streams.jsonl", Messages: true, New: func(t *testing.T, src *relaytest.Source) (relay.Framing, relay.Source) {
			f := &wsFraming{r: &realtimeRequest{id: "golden-1"}, rctx: t.Context()}
			return f, indexed{src: src, index: &f.index}
		}},
	)
}

// indexed tells the framing each event's journal index, as wsSource does.
type indexed struct {
	src   *relaytest.Source
	index *int
}

func (s indexed) Next(ctx context.Context) (npu.Event, error) {
	ev, err := s.src.Next(ctx)
	*s.index = s.src.Index()
	return ev, err
}
