// Package openaiapi serves the OpenAI-compatible API: chat and legacy
// completions, streamed as server-sent events or answered whole, and the
// model list. It reads from the same npu.Runner streams as every other
// protocol writer.
package openaiapi

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
)

// Config holds the API's settings.
type Config struct {
	// DefaultTimeout bounds generation time when a request has no
	// timeout_ms; 0 = none.
	DefaultTimeout time.Duration
	// WriteTimeout bounds each write to a client; a client that reads
	// nothing for that long is dropped. 0 = none.
	WriteTimeout time.Duration
}

// API serves the OpenAI-compatible routes.
type API struct {
	runner *npu.Runner
	cfg    Config
	log    *slog.Logger
}

// New returns the API for runner.
func New(runner *npu.Runner, cfg Config, log *slog.Logger) *API {
	return &API{runner: runner, cfg: cfg, log: log}
}

// Register adds the routes to r.
func (a *API) Register(r gin.IRouter) {
	v1 := r.Group("/v1")
	v1.POST("/chat/completions", func(c *gin.Context) { a.complete(c, chatEndpoint) })
	v1.POST("/completions", func(c *gin.Context) { a.complete(c, completionsEndpoint) })
	v1.GET("/models", a.listModels)
	v1.GET("/models/*id", a.getModel)
}
