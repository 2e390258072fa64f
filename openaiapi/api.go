// Package openaiapi serves the OpenAI-compatible API: chat and legacy
// completions, streamed as server-sent events or answered whole, the
// Responses API (over HTTP and in its WebSocket mode), embeddings, audio,
// and the model list. It reads from the same router's streams as every other
// protocol writer.
package openaiapi

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/wsconn"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
	"github.com/npud/npud/wire/route"
)

// Config holds the API's settings.
type Config struct {
	// Images bounds the images of a request (for vision models).
	Images imagein.Limits
	// Audio bounds the audio files of transcriptions (zero fields:
	// audioin.DefaultLimits).
	Audio audioin.Limits
	// AudioDecoder decodes the formats the built-in decoders cannot
	// (Opus, WebM, M4A, AAC); nil: they are refused with a 400.
	AudioDecoder *audioin.External
	// MaxAudioDecodes bounds the uploads decoded at once (before they
	// queue for the engine); past it a request is a 503 with
	// Retry-After. 0: one per CPU.
	MaxAudioDecodes int
	// DefaultTimeout bounds generation time when a request has no
	// timeout_ms; 0 = none.
	DefaultTimeout time.Duration
	// WriteTimeout bounds each write to a client; a client that reads
	// nothing for that long is dropped. 0 = none.
	WriteTimeout time.Duration
	// MaxEmbedInputs bounds the inputs of one embedding request, as on
	// Ollama's /api/embed; 0 = no cap.
	MaxEmbedInputs int
	// Journal bounds how long and how much of a stream is kept for
	// clients that start it again with the same Idempotency-Key or resume
	// it with Last-Event-ID.
	Journal journal.Config
	// Responses bounds the stored responses of the Responses API.
	Responses StoreConfig
	// WebSockets, when set, serves the Responses API's WebSocket mode
	// (GET /v1/responses upgraded) on its connections, which npud's own
	// WebSocket API shares: their bounds, drain, key revocation and
	// accounting.
	WebSockets *wsconn.Hub
	// MaxWSMessages bounds the messages a client may send on one Responses
	// WebSocket connection (0: defaultMaxWSMessages); past it the
	// connection gets the error OpenAI's clients take as "connect again"
	// and closes.
	MaxWSMessages int
}

// Router is what the OpenAI API needs of the router (npu/serve.Router,
// which only the daemon imports), in the contract's types, declared
// here so its tests can put a fake in front of it (an error the engine
// gives, a queue that is full) without starting a daemon.
type Router interface {
	ModelFinder
	Start(req *npu.Request) (npu.Stream, error)
	Models() []npu.ModelInfo
	Simulated() bool
	Embed(ctx context.Context, req npu.EmbedRequest) (npu.Embedded, error)
	Rerank(ctx context.Context, req npu.RerankRequest) (npu.Reranked, error)
	Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error)
	Wait(ctx context.Context) error
	Abort()
}

// API serves the OpenAI-compatible routes.
type API struct {
	router   Router
	cfg      Config
	log      *slog.Logger
	journals *journal.Registry
	// responses are the stored responses (previous_response_id, GET).
	responses *responseStore
	// decodes holds a token per audio upload being decoded.
	decodes chan struct{}
}

// New returns the API for router.
func New(router Router, cfg Config, log *slog.Logger) *API {
	if cfg.MaxAudioDecodes <= 0 {
		cfg.MaxAudioDecodes = runtime.NumCPU()
	}
	return &API{router: router, cfg: cfg, log: log, journals: journal.NewRegistry(cfg.Journal),
		responses: newResponseStore(cfg.Responses), decodes: make(chan struct{}, cfg.MaxAudioDecodes)}
}

// Shutdown waits, for a drain, until the journals' pumps have ended (they
// end with their streams, which the engine's end has ended) or ctx ends.
func (a *API) Shutdown(ctx context.Context) error {
	if err := a.journals.Wait(ctx); err != nil {
		return fmt.Errorf("waiting for stream journals: %w", err)
	}
	return nil
}

// Journals holds the streams kept for idempotent starts and resumes.
func (a *API) Journals() *journal.Registry { return a.journals }

// Routes declares what the API's routes do.
func (a *API) Routes() route.Set {
	set := route.Set{
		Generation: []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/rerank", "/rerank", responsesPath, "/v1/audio/transcriptions", "/v1/audio/translations"},
	}
	if a.cfg.WebSockets != nil {
		set.WebSocket = []string{responsesPath}
	}
	return set
}

// Register adds the routes to r.
func (a *API) Register(r gin.IRouter) {
	v1 := r.Group("/v1")
	v1.POST("/chat/completions", func(c *gin.Context) { a.complete(c, chatEndpoint) })
	v1.POST("/completions", func(c *gin.Context) { a.complete(c, completionsEndpoint) })
	v1.POST("/responses", a.createResponse)
	if a.cfg.WebSockets != nil {
		r.GET(responsesPath, a.responsesWebSocket)
	}
	v1.GET("/responses/:id", a.getResponse)
	v1.GET("/responses/:id/input_items", a.listInputItems)
	v1.DELETE("/responses/:id", a.deleteResponse)
	v1.POST("/responses/:id/cancel", a.cancelResponse)
	v1.POST("/embeddings", a.embeddings)
	v1.POST("/rerank", a.rerank)
	r.POST("/rerank", a.rerank) // llama.cpp's and Jina's clients also call it unversioned
	v1.POST("/audio/transcriptions", func(c *gin.Context) { a.audio(c, npu.TaskTranscribe) })
	v1.POST("/audio/translations", func(c *gin.Context) { a.audio(c, npu.TaskTranslate) })
	v1.GET("/models", a.listModels)
	v1.GET("/models/*id", a.getModel)
}
