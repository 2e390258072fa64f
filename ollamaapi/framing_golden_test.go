package ollamaapi

import (
	"flag"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/npud/npud/npu/serve/servetest"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/relay/relaytest"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the framing transcripts in testdata/framing")

// The exact bytes of Ollama's streams (/api/chat and /api/generate, as
// NDJSON and as SSE) for scripted generations: text, thinking, tool calls
// (whole, in the chunk that completes them), heartbeats, each way a stream
// ends, an error after the first byte and a resume after the end
// (testdata/framing; go test -update rewrites them).
func TestFramingTranscripts(t *testing.T) {
	a := New(servetest.IdleRouter(t), Config{}, slog.New(slog.DiscardHandler))
	lines := func(ep endpoint, sse bool) func(*testing.T, *relaytest.Source) (relay.Framing, relay.Source) {
		return func(_ *testing.T, src *relaytest.Source) (relay.Framing, relay.Source) {
			return &lineFraming{sse: sse, ep: ep, model: "sim", start: time.Now(), a: a}, src
		}
	}
	// Each chunk's clock, and the duration since the request's start.
	clocks := []relaytest.Replace{
		{Pattern: regexp.MustCompile(`"created_at":"[^"]*"`), With: `"created_at":"T"`},
		{Pattern: regexp.MustCompile(`"total_duration":\d+`), With: `"total_duration":0`},
	}
	relaytest.Check(t, "testdata/framing", *updateTranscripts,
		relaytest.Framer{Name: "chat.ndjson", New: lines(chatEndpoint, false), Varying: clocks},
		relaytest.Framer{Name: "generate.ndjson", New: lines(generateEndpoint, false), Varying: clocks},
		relaytest.Framer{Name: "chat.sse", New: lines(chatEndpoint, true), Varying: clocks},
	)
}
