// Package ollamaapi serves the Ollama-compatible API: generate and chat
// streamed as NDJSON (or SSE for clients that ask), model listing, load and
// unload through keep_alive, and embeddings. It reads from the same
// router's streams as the OpenAI API.
package ollamaapi

import (
	"context"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/route"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
)

// CompatVersion is the Ollama API version npud implements and reports at
// /api/version: clients compare it to decide which features to use.
const CompatVersion = "0.17.4"

// Config holds the API's settings.
type Config struct {
	// Images bounds the images of a request (for vision models).
	Images imagein.Limits
	// DefaultTimeout bounds generation time; 0 = none.
	DefaultTimeout time.Duration
	// WriteTimeout bounds each write to a client; 0 = none.
	WriteTimeout time.Duration
	// Version is npud's own version, reported beside CompatVersion.
	Version string
	// MaxEmbedInputs bounds the inputs of one embedding request; 0 = no cap.
	MaxEmbedInputs int
}

// Router is what the Ollama API needs of the router (npu/serve.Router,
// which only the daemon imports), in the contract's types, declared
// here so its tests can put a fake in front of it
// without starting a daemon.
type Router interface {
	Start(req *npu.Request) (npu.Stream, error)
	Model(id string) (npu.ModelInfo, error)
	Models() []npu.ModelInfo
	RetryAfter() time.Duration
	Simulated() bool
	EngineName() string
	Embed(ctx context.Context, req npu.EmbedRequest) (npu.Embedded, error)
	Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error
	Delete(ctx context.Context, name string) error
	Copy(ctx context.Context, source, destination string) error
	LoadModel(ctx context.Context, id string, keepAlive *time.Duration) (time.Duration, error)
	UnloadModel(ctx context.Context, id string) error
	Loaded() []npu.LoadedModel
	Loading() []npu.LoadStatus
	Preloaded(id string) bool
	DeviceOf(model string) string
	Restarts(model string) int
	Wait(ctx context.Context) error
	Abort()
}

// API serves the Ollama-compatible routes.
type API struct {
	router Router
	cfg    Config
	log    *slog.Logger
}

// New returns the API for router.
func New(router Router, cfg Config, log *slog.Logger) *API {
	return &API{router: router, cfg: cfg, log: log}
}

// Shutdown is the API's part of a drain: nothing outlives its handlers,
// which http.Server.Shutdown waits for.
func (a *API) Shutdown(context.Context) error { return nil }

// Routes declares what the API's routes do.
func (a *API) Routes() route.Set {
	return route.Set{
		Generation:      []string{"/api/generate", "/api/chat", "/api/embed", "/api/embeddings"},
		ModelManagement: []string{"/api/pull", "/api/delete", "/api/copy"},
	}
}

// Register adds the routes to r.
func (a *API) Register(r gin.IRouter) {
	r.GET("/", a.root)
	r.HEAD("/", a.root)
	api := r.Group("/api")
	api.GET("/version", a.version)
	api.GET("/tags", a.tags)
	api.POST("/show", a.show)
	api.GET("/ps", a.ps)
	api.POST("/generate", func(c *gin.Context) { a.complete(c, generateEndpoint) })
	api.POST("/chat", func(c *gin.Context) { a.complete(c, chatEndpoint) })
	api.POST("/embed", a.embed)
	api.POST("/embeddings", a.embeddings)
	api.POST("/pull", a.pull)
	api.DELETE("/delete", a.deleteModel)
	api.POST("/copy", a.copyModel)
}

func (a *API) root(c *gin.Context) {
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.Status(http.StatusOK)
	if c.Request.Method != http.MethodHead {
		_, _ = c.Writer.WriteString("Ollama is running") // as clients probe for it; npud answers for Ollama
	}
}

func (a *API) version(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"version": CompatVersion, "npud_version": a.cfg.Version})
}
