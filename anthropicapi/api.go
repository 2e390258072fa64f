// Package anthropicapi serves the Anthropic Messages API (/v1/messages
// and /v1/messages/count_tokens), the API Claude Code and Anthropic's SDKs
// speak. It reads from the same router's streams and writes through the
// same relay as the other protocol writers; it supplies only the
// Messages API's request mapping, message object and event framing.
package anthropicapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/route"
)

// Config holds the API's settings.
type Config struct {
	// Images bounds the images of a request (for vision models).
	Images imagein.Limits
	// DefaultTimeout bounds generation time; 0 = none.
	DefaultTimeout time.Duration
	// WriteTimeout bounds each write to a client; 0 = none.
	WriteTimeout time.Duration
}

// Paths of the API.
const (
	MessagesPath    = "/v1/messages"
	CountTokensPath = "/v1/messages/count_tokens"
)

// Router is what the Messages API needs of the router (npu/serve.Router,
// which only the daemon imports), in the contract's types, declared
// here so its tests can put a fake in front of it (an error the engine
// gives, a queue that is full) without starting a daemon.
type Router interface {
	Start(req *npu.Request) (npu.Stream, error)
	// CountPrompt counts a request's prompt as its generation would
	// (count_tokens); an error wrapping npu.ErrPromptNotCounted when
	// npud does not count the model's prompts.
	CountPrompt(ctx context.Context, req *npu.Request) (int, error)
	Model(id string) (npu.ModelInfo, error)
	Models() []npu.ModelInfo
	RetryAfter() time.Duration
}

// API serves the Messages API routes.
type API struct {
	router Router
	cfg    Config
	log    *slog.Logger
}

// New returns the API for router.
func New(router Router, cfg Config, log *slog.Logger) *API {
	return &API{router: router, cfg: cfg, log: log}
}

// Routes declares what the API's routes do.
func (a *API) Routes() route.Set {
	return route.Set{Generation: []string{MessagesPath}}
}

// Register adds the routes to r.
func (a *API) Register(r gin.IRouter) {
	r.POST(MessagesPath, a.messages)
	r.POST(CountTokensPath, a.countTokens)
}
