package openaiapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
)

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Capabilities is an extension: what the model can do, as Ollama's
	// /api/show lists it (completion, tools, thinking, vision).
	Capabilities []string `json:"capabilities"`
	// ContextLength and PromptLimit are extensions: the tokens the model
	// serves, prompt and answer together, and the longest prompt it takes
	// when that is less (on the NPU, MAX_PROMPT_LEN).
	ContextLength int `json:"context_length,omitempty"`
	PromptLimit   int `json:"prompt_limit,omitempty"`
}

func toModel(m npu.ModelInfo) model {
	return model{ID: m.ID, Object: "model", Created: m.Created.Unix(), OwnedBy: m.OwnedBy, Capabilities: npu.Capabilities(m),
		ContextLength: m.ContextLength, PromptLimit: m.PromptLimit}
}

func (a *API) listModels(c *gin.Context) {
	data := []model{} // [] on the wire, never null
	for _, m := range a.router.Models() {
		data = append(data, toModel(m))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

func (a *API) getModel(c *gin.Context) {
	id := strings.TrimPrefix(c.Param("id"), "/") // ids may contain slashes
	m, err := a.router.Model(id)
	if err != nil {
		WriteError(c.Writer, toError(err, a.router.RetryAfter))
		return
	}
	m.ID = id // an alias answers under its own name
	c.JSON(http.StatusOK, toModel(m))
}
