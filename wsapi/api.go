// Package wsapi serves npud's own WebSocket protocol at /npud/v1/streams:
// one connection carries many chat generations, each named by the client
// and started, cancelled, paused and resumed by messages (docs/REALTIME.md).
// Its requests are OpenAI chat requests (wire/openaichat reads them, as
// for /v1/chat/completions), its generations are journaled in the OpenAI
// API's registry, so a generation started over HTTP can be joined here and
// the other way round, its connections live in wire/wsconn (shared with
// the Responses API's WebSocket mode), and it writes through the same
// relay as every streaming protocol.
package wsapi

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/route"
	"github.com/npud/npud/wire/wsconn"
)

// StreamsPath is the WebSocket endpoint. The protocol is npud's own, so
// its path cannot be taken for OpenAI's Realtime API.
const StreamsPath = "/npud/v1/streams"

// LegacyRealtimePath is where the WebSocket was first served; it still
// works, answers with a Deprecation header, and will go: OpenAI's
// Realtime clients connect there and would find another protocol.
const LegacyRealtimePath = "/v1/realtime"

// Config bounds the WebSocket endpoint.
type Config struct {
	// Conns holds the connections: their bounds, the drain, key
	// revocation, and the daemon's admission and accounting of each
	// start. The OpenAI API's Responses WebSocket mode shares it.
	Conns       *wsconn.Hub
	Images      imagein.Limits // bounds the images of a start message
	MaxRequests int            // generations at once per connection
	// DefaultTimeout is the generation deadline when a start has no
	// timeout_ms; 0 = none.
	DefaultTimeout time.Duration
}

// Router is what the WebSocket API needs of the router (npu/serve.Router,
// which only the daemon imports), in the contract's types, declared
// here so its tests can put a fake in front of it
// without starting a daemon.
type Router interface {
	openaichat.ModelFinder
	Start(req *npu.Request) (npu.Stream, error)
	Waiting() int
}

// API serves the WebSocket.
type API struct {
	router   Router
	journals *journal.Registry
	cfg      Config
	log      *slog.Logger
}

// New returns the WebSocket API over router, journaling into journals
// (shared with the OpenAI API, for joins and resumes across protocols).
func New(router Router, journals *journal.Registry, cfg Config, log *slog.Logger) *API {
	return &API{router: router, journals: journals, cfg: cfg, log: log}
}

// Routes declares what the API's routes do.
func (a *API) Routes() route.Set {
	return route.Set{WebSocket: []string{StreamsPath, LegacyRealtimePath}}
}

// Register adds the routes to r.
func (a *API) Register(r gin.IRouter) {
	r.GET(StreamsPath, a.realtime)
	r.GET(LegacyRealtimePath, func(c *gin.Context) {
		c.Header("Deprecation", "true")
		c.Header("Link", "<"+StreamsPath+">; rel=\"successor-version\"")
		a.realtime(c)
	})
}
