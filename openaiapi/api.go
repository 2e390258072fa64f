// Package openaiapi serves the OpenAI-compatible API: chat and legacy
// completions, streamed as server-sent events or answered whole, and the
// model list. It reads from the same npu.Runner streams as every other
// protocol writer.
package openaiapi

import (
	"context"
	"github.com/npud/npud/wire/route"
	"log/slog"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
)

// Config holds the API's settings.
type Config struct {
	// DefaultTimeout bounds generation time when a request has no
	// timeout_ms; 0 = none.
	DefaultTimeout time.Duration
	// WriteTimeout bounds each write to a client; a client that reads
	// nothing for that long is dropped. 0 = none.
	WriteTimeout time.Duration
	// Journal bounds how long and how much of a stream is kept for
	// clients that start it again with the same X-Request-ID or resume it
	// with Last-Event-ID.
	Journal journal.Config
	// Realtime bounds the WebSocket endpoint.
	Realtime RealtimeConfig
}

// API serves the OpenAI-compatible routes.
type API struct {
	runner   *npu.Runner
	cfg      Config
	log      *slog.Logger
	journals *journal.Registry

	// WebSocket connections outlive http.Server.Shutdown (they are
	// hijacked), so the API tracks them for the drain.
	realtimeConns sync.WaitGroup
	connsMu       sync.Mutex
	conns         map[*realtimeConn]string // open WebSockets, with the id of the key that opened each
	drainOnce     sync.Once
	draining      chan struct{} // closed when the drain begins
	closeAll      context.Context
	closeAllNow   context.CancelFunc
}

// New returns the API for runner.
func New(runner *npu.Runner, cfg Config, log *slog.Logger) *API {
	closeAll, closeAllNow := context.WithCancel(context.Background())
	return &API{runner: runner, cfg: cfg, log: log, journals: journal.NewRegistry(cfg.Journal),
		draining: make(chan struct{}), closeAll: closeAll, closeAllNow: closeAllNow}
}

// Shutdown ends the API's long-lived work for a drain: each WebSocket
// connection finishes the generations it runs and closes with 1001 (going
// away); when ctx ends first, the rest end with an in-band error and are
// closed. It returns when all are gone.
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

// CloseKeys closes, with 1008 (policy violation), the WebSockets opened
// with any of the API keys named by keyIDs: a reload revoked them.
func (a *API) CloseKeys(keyIDs []string) {
	revoked := map[string]bool{}
	for _, id := range keyIDs {
		revoked[id] = true
	}
	a.connsMu.Lock()
	var closing []*realtimeConn
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

func (a *API) trackConn(rc *realtimeConn, keyID string) (untrack func()) {
	a.connsMu.Lock()
	defer a.connsMu.Unlock()
	if a.conns == nil {
		a.conns = map[*realtimeConn]string{}
	}
	a.conns[rc] = keyID
	return func() {
		a.connsMu.Lock()
		delete(a.conns, rc)
		a.connsMu.Unlock()
	}
}

// Journals holds the streams kept for idempotent starts and resumes.
func (a *API) Journals() *journal.Registry { return a.journals }

// StreamsPath is npud's WebSocket endpoint. Its protocol is npud's own,
// so its path cannot be taken for OpenAI's Realtime API.
const StreamsPath = "/npud/v1/streams"

// LegacyRealtimePath is where the WebSocket was first served; it still
// works, answers with a Deprecation header, and will go: OpenAI's
// Realtime clients connect there and would find another protocol.
const LegacyRealtimePath = "/v1/realtime"

// Routes declares what the API's routes do.
func (a *API) Routes() route.Set {
	return route.Set{
		Generation: []string{"/v1/chat/completions", "/v1/completions"},
		WebSocket:  []string{StreamsPath, LegacyRealtimePath},
	}
}

// Register adds the routes to r.
func (a *API) Register(r gin.IRouter) {
	v1 := r.Group("/v1")
	v1.POST("/chat/completions", func(c *gin.Context) { a.complete(c, chatEndpoint) })
	v1.POST("/completions", func(c *gin.Context) { a.complete(c, completionsEndpoint) })
	r.GET(StreamsPath, a.realtime)
	r.GET(LegacyRealtimePath, func(c *gin.Context) {
		c.Header("Deprecation", "true")
		c.Header("Link", "<"+StreamsPath+">; rel=\"successor-version\"")
		a.realtime(c)
	})
	v1.GET("/models", a.listModels)
	v1.GET("/models/*id", a.getModel)
}
