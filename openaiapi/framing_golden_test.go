package openaiapi

import (
	"flag"
	"log/slog"
	"testing"

	"github.com/npud/npud/npu/serve/servetest"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/relay/relaytest"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the framing transcripts in testdata/framing")

// The exact bytes of OpenAI's event streams (chat, legacy completions,
// the Responses API) for scripted generations: text, reasoning, tool-call
// pieces, heartbeats, each way a stream ends, an error after the first
// byte and a resume after the end (testdata/framing; go test -update
// rewrites them).
func TestFramingTranscripts(t *testing.T) {
	a := New(servetest.IdleRouter(t), Config{}, slog.New(slog.DiscardHandler))
	const created = 1700000000
	chat := func(ep endpoint, resumable, includeUsage bool) func(*testing.T, *relaytest.Source) (relay.Framing, relay.Source) {
		return func(_ *testing.T, src *relaytest.Source) (relay.Framing, relay.Source) {
			s := &source{ids: resumable, position: src.Index}
			return &sseFraming{a: a, ep: ep, src: s, enc: newChunkEncoder(ep, "chatcmpl-golden", created, "sim"), includeUsage: includeUsage}, src
		}
	}
	responses := func(_ *testing.T, src *relaytest.Source) (relay.Framing, relay.Source) {
		f := &responseFraming{a: a, run: newResponseRun("resp_golden", created, &responsesRequest{Model: "sim"})}
		f.run.builder = newResponseBuilder("resp_golden", f.emit)
		return f, src
	}
	relaytest.Check(t, "testdata/framing", *updateTranscripts,
		relaytest.Framer{Name: "chat.sse", New: chat(chatEndpoint, false, true)},
		relaytest.Framer{Name: "chat-resumable.sse", New: chat(chatEndpoint, true, false)},
		relaytest.Framer{Name: "completions.sse", New: chat(completionsEndpoint, false, false)},
		relaytest.Framer{Name: "responses.sse", New: responses},
	)
}
