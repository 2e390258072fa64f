// Package wsapi serves npud's own WebSocket protocol at /npud/v1/streams:
// one connection carries many chat generations, each named by the client
// and started, cancelled, paused and resumed by messages (docs/REALTIME.md).
// Its requests are OpenAI chat requests (openaiapi parses them), its
// generations are journaled in the OpenAI API's registry, so a generation
// started over HTTP can be joined here and the other way round, and it
// writes through the same relay as every streaming protocol.
package wsapi

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
	"github.com/npud/npud/openaiapi"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/route"
)

// StreamsPath is the WebSocket endpoint. The protocol is npud's own, so
// its path cannot be taken for OpenAI's Realtime API.
const StreamsPath = "/npud/v1/streams"

// LegacyRealtimePath is where the WebSocket was first served; it still
// works, answers with a Deprecation header, and will go: OpenAI's
// Realtime clients connect there and would find another protocol.
const LegacyRealtimePath = "/v1/realtime"

// Refusal is why a start is not admitted (a tenant over its rate).
type Refusal struct {
	Code    string
	Message string
}

// Config bounds the WebSocket endpoint.
type Config struct {
	Images      imagein.Limits // bounds the images of a start message
	MaxRequests int            // generations at once per connection
	MaxMessage  func() int64   // largest client message, read per connection (a reload may change it)
	// Admit, when set, takes one request from the tenant's rate budget for
	// each start message, or says why not.
	Admit func(tenant string) *Refusal
	// KeyValid reports whether the key a connection authenticated with
	// (its id; "" without keys) is still configured: a connection whose
	// key a reload revoked while it was being accepted is closed too.
	KeyValid     func(keyID string) bool
	PingInterval time.Duration // WebSocket pings that keep proxies from idling the connection out; 0 = none
	// RequestEnded, when set, reports a generation of the connection on
	// route (its path) for the metrics, as an HTTP request's end is.
	RequestEnded func(route string, info *reqinfo.Info)
	// StreamOpened, when set, counts a generation as an active stream
	// of route until done is called (npud_active_streams, as for HTTP).
	StreamOpened func(route string) (done func())
	// MaxMessages bounds the messages a client may send on one Responses
	// connection (0: DefaultMaxMessages); past it the connection gets the
	// error OpenAI's clients take as "connect again" and closes.
	MaxMessages int
	// Responses, when set, serves the Responses API's WebSocket mode
	// (GET /v1/responses): its requests, store and events are the OpenAI
	// API's.
	Responses      *openaiapi.API
	AllowAnyOrigin bool          // the daemon's CORS check already vetted Origin
	DefaultTimeout time.Duration // generation deadline when a start has no timeout_ms; 0 = none
	WriteTimeout   time.Duration // a client that reads nothing for that long loses its connection; 0 = none
}

// Runner is what the WebSocket API needs of npu.Runner, declared here so
// its tests can put a fake in front of the runner without a daemon.
type Runner interface {
	openaichat.ModelFinder
	Start(req *npu.Request) (*npu.Stream, error)
	Waiting() int
}

// API serves the WebSocket.
type API struct {
	runner   Runner
	journals *journal.Registry
	cfg      Config
	log      *slog.Logger

	// Connections outlive http.Server.Shutdown (they are hijacked), so the
	// API tracks them for the drain.
	realtimeConns sync.WaitGroup
	connsMu       sync.Mutex
	conns         map[connHandler]string // open connections, with the id of the key that opened each
	drainOnce     sync.Once
	draining      chan struct{} // closed when the drain begins
	closeAll      context.Context
	closeAllNow   context.CancelFunc
}

// New returns the WebSocket API over runner, journaling into journals
// (shared with the OpenAI API, for joins and resumes across protocols).
func New(runner Runner, journals *journal.Registry, cfg Config, log *slog.Logger) *API {
	closeAll, closeAllNow := context.WithCancel(context.Background())
	return &API{runner: runner, journals: journals, cfg: cfg, log: log,
		draining: make(chan struct{}), closeAll: closeAll, closeAllNow: closeAllNow}
}

// Routes declares what the API's routes do.
func (a *API) Routes() route.Set {
	ws := []string{StreamsPath, LegacyRealtimePath}
	if a.cfg.Responses != nil {
		ws = append(ws, ResponsesPath)
	}
	return route.Set{WebSocket: ws}
}

// Register adds the routes to r.
func (a *API) Register(r gin.IRouter) {
	r.GET(StreamsPath, a.realtime)
	if a.cfg.Responses != nil {
		r.GET(ResponsesPath, a.responses)
	}
	r.GET(LegacyRealtimePath, func(c *gin.Context) {
		c.Header("Deprecation", "true")
		c.Header("Link", "<"+StreamsPath+">; rel=\"successor-version\"")
		a.realtime(c)
	})
}

// Shutdown ends the connections for a drain: each finishes the
// generations it runs and closes with 1001 (going away); when ctx ends
// first, the rest end with an in-band error and are closed. It returns
// when all are gone.
func (a *API) Shutdown(ctx context.Context) {
	a.drainOnce.Do(func() { close(a.draining) })
	done := make(chan struct{})
	go func() { a.realtimeConns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		a.closeAllNow()
		<-done
	}
}

// CloseKeys closes, with 1008 (policy violation), the connections opened
// with any of the API keys named by keyIDs: a reload revoked them.
func (a *API) CloseKeys(keyIDs []string) {
	revoked := map[string]bool{}
	for _, id := range keyIDs {
		revoked[id] = true
	}
	a.connsMu.Lock()
	var closing []connHandler
	for rc, key := range a.conns {
		if key != "" && revoked[key] {
			closing = append(closing, rc)
		}
	}
	a.connsMu.Unlock()
	for _, rc := range closing {
		rc.revoke()
	}
}

func (a *API) trackConn(rc connHandler, keyID string) (untrack func()) {
	a.connsMu.Lock()
	defer a.connsMu.Unlock()
	if a.conns == nil {
		a.conns = map[connHandler]string{}
	}
	a.conns[rc] = keyID
	return func() {
		a.connsMu.Lock()
		delete(a.conns, rc)
		a.connsMu.Unlock()
	}
}
