package ollamaapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/streamwriter"
)

type details struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

type listedModel struct {
	Name       string  `json:"name"`
	Model      string  `json:"model"`
	ModifiedAt string  `json:"modified_at,omitempty"`
	Size       int64   `json:"size"`
	Digest     string  `json:"digest"`
	Details    details `json:"details"`
	ExpiresAt  string  `json:"expires_at,omitempty"`
	SizeVRAM   *int64  `json:"size_vram,omitempty"`
	// ContextLength is what /api/ps reports of a loaded model (the CLI's
	// CONTEXT column).
	ContextLength int `json:"context_length,omitempty"`
	// PromptLimit is npud's addition: the longest prompt the model takes
	// when that is less than its context (on the NPU, MAX_PROMPT_LEN).
	PromptLimit int    `json:"prompt_limit,omitempty"`
	Device      string `json:"device,omitempty"` // npud's addition: where a loaded model runs
	// Restarts is npud's addition: how many times a crash or hang
	// restarted the model's worker process.
	Restarts *int `json:"restarts,omitempty"`
}

func (a *API) describe(m npu.ModelInfo) listedModel {
	sum := sha256.Sum256([]byte(a.router.EngineName() + "/" + m.ID))
	family := m.Details.Architecture
	if family == "" {
		family = a.router.EngineName()
	}
	d := details{Format: a.router.EngineName(), Family: family, Families: []string{family},
		ParameterSize: orUnknown(m.Details.ParameterSize), QuantizationLevel: orUnknown(m.Details.Quantization)}
	if a.router.Simulated() {
		d.Format, d.ParameterSize, d.QuantizationLevel = "simulated", "0", "none"
	}
	return listedModel{Name: m.ID, Model: m.ID, ModifiedAt: m.Created.UTC().Format(time.RFC3339Nano),
		Size: m.Size, Digest: hex.EncodeToString(sum[:]), Details: d}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// modelInfo is /api/show's model_info: the GGUF-style keys Ollama sends
// and its CLI reads (general.architecture, then "<arch>.context_length"
// and "<arch>.embedding_length"), with what the model's folder tells.
func modelInfo(m npu.ModelInfo, family string) map[string]any {
	info := map[string]any{
		"general.architecture":     family,
		"general.basename":         m.ID,
		"general.parameter_count":  m.Details.ParameterCount,
		family + ".context_length": m.ContextLength,
	}
	if m.PromptLimit > 0 {
		// npud's additions: what it serves, when a prompt has a limit of
		// its own (the NPU's MAX_PROMPT_LEN).
		info["npud.context_length"] = m.ContextLength
		info["npud.prompt_limit"] = m.PromptLimit
	}
	if m.Details.TrainedContext > 0 {
		// What the model was trained for; npud serves ContextLength.
		info[family+".context_length"] = m.Details.TrainedContext
	}
	for key, v := range map[string]int{
		"embedding_length":        m.Details.EmbeddingLength,
		"block_count":             m.Details.BlockCount,
		"attention.head_count":    m.Details.HeadCount,
		"attention.head_count_kv": m.Details.HeadCountKV,
		"vocab_size":              m.Details.VocabSize,
	} {
		if v > 0 {
			info[family+"."+key] = v
		}
	}
	return info
}

// unservedModel is npud's addition to /api/tags: a model in the models
// folder that no engine serves (pulled while the simulated engine
// serves), and why. It is apart from "models", which clients offer to run.
type unservedModel struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	ModifiedAt string `json:"modified_at,omitempty"`
	Why        string `json:"why"`
}

// unservedRunner is a router that knows the models folder's models no
// engine serves (npu.Router).
type unservedRunner interface {
	Unserved() []npu.UnservedModel
}

func (a *API) tags(c *gin.Context) {
	models := []listedModel{} // [] on the wire, never null
	for _, m := range a.router.Models() {
		models = append(models, a.describe(m))
	}
	out := gin.H{"models": models}
	if r, ok := a.router.(unservedRunner); ok {
		if list := r.Unserved(); len(list) > 0 {
			unserved := make([]unservedModel, 0, len(list))
			for _, u := range list {
				unserved = append(unserved, unservedModel{Name: u.Model.ID, Size: u.Model.Size,
					ModifiedAt: u.Model.Created.UTC().Format(time.RFC3339Nano), Why: u.Why})
			}
			out["unserved"] = unserved
		}
	}
	c.JSON(http.StatusOK, out)
}

// forever is the expires_at of a model kept loaded without limit.
var forever = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

func (a *API) ps(c *gin.Context) {
	models := []listedModel{}
	for _, lm := range a.router.Loaded() {
		m := a.describe(lm.Model)
		m.ModifiedAt = ""
		expires := lm.ExpiresAt
		if expires.IsZero() {
			expires = forever
		}
		m.ExpiresAt = expires.UTC().Format(time.RFC3339Nano)
		zero := int64(0)
		m.SizeVRAM = &zero // NPU and CPU models live in system memory
		m.ContextLength, m.PromptLimit = lm.Model.ContextLength, lm.Model.PromptLimit
		m.Device = a.router.DeviceOf(lm.Model.ID) // "simulated" for the simulated engine
		if n := a.router.Restarts(lm.Model.ID); n > 0 {
			m.Restarts = &n
		}
		models = append(models, m)
	}
	out := gin.H{"models": models}
	if loads := a.router.Loading(); len(loads) > 0 {
		// npud's addition: models still loading (Ollama's clients read
		// only "models"); `npud ps` shows them.
		now := time.Now()
		loading := make([]loadingModel, 0, len(loads))
		for _, l := range loads {
			loading = append(loading, loadingModel{Name: l.Model, Status: l.Text(),
				FirstCompile: l.Compile == npu.CompileFirst, Seconds: int64(now.Sub(l.Since) / time.Second)})
		}
		out["loading"] = loading
	}
	c.JSON(http.StatusOK, out)
}

// loadingModel is a model being loaded, in /api/ps.
type loadingModel struct {
	Name         string `json:"name"`
	Status       string `json:"status"` // "compiling for NPU (first time)", "loading the compiled model", "loading"
	FirstCompile bool   `json:"first_compile"`
	Seconds      int64  `json:"seconds"` // since the load started
}

// nameRequest is the body of show, pull and delete: model, or name.
type nameRequest struct {
	Model  string `json:"model"`
	Name   string `json:"name"`
	Stream *bool  `json:"stream"`
}

func (r *nameRequest) model() string {
	if r.Model != "" {
		return r.Model
	}
	return r.Name
}

// decodeModel decodes a body naming a model; it answers the error itself.
func (a *API) decodeModel(c *gin.Context, into any, name func() string) (npu.ModelInfo, string, bool) {
	info := reqinfo.From(c.Request.Context())
	if err := jsonbody.Decode(c.Request, into); err != nil {
		a.fail(c.Writer, info, bodyError(err))
		return npu.ModelInfo{}, "", false
	}
	id := name()
	info.Model = id
	if id == "" {
		a.fail(c.Writer, info, badRequest("model is required"))
		return npu.ModelInfo{}, "", false
	}
	m, err := a.router.Model(id)
	if err != nil {
		return npu.ModelInfo{}, id, true // the caller decides: pull may still work
	}
	return m, id, true
}

func (a *API) show(c *gin.Context) {
	var req nameRequest
	m, id, ok := a.decodeModel(c, &req, req.model)
	if !ok {
		return
	}
	if m.ID == "" {
		_, err := a.router.Model(id)
		a.fail(c.Writer, reqinfo.From(c.Request.Context()), a.toError(err))
		return
	}
	d := a.describe(m)
	capabilities := npu.Capabilities(m)
	modelfile := fmt.Sprintf("# %s, served by npud's %s engine\n", m.ID, a.router.EngineName())
	if a.router.Simulated() {
		modelfile = fmt.Sprintf("# %s: npud's simulated model; it does no inference\n", m.ID)
	}
	info := modelInfo(m, d.Details.Family)
	if m.Details.PropertiesRefused != "" {
		info["npud.properties_refused"] = m.Details.PropertiesRefused
	}
	if m.Details.PromptRenderer != "" {
		// npud renders and counts the prompt itself (docs/OPENVINO.md).
		info["npud.prompt_renderer"] = m.Details.PromptRenderer
	}
	c.JSON(http.StatusOK, gin.H{
		"modelfile":    modelfile,
		"parameters":   folderParameters(m.Details.Properties),
		"template":     "",
		"details":      d.Details,
		"model_info":   info,
		"capabilities": capabilities,
		"modified_at":  d.ModifiedAt,
	})
}

// folderParameters are the engine properties the model's folder sets
// (npud-properties.json), as Ollama's show lists a model's parameters: one
// "NAME VALUE" line each, sorted.
func folderParameters(props map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s %s\n", k, props[k])
	}
	return b.String()
}

// embedInput is `input`: a string or an array of strings.
type embedInput []string

func (e *embedInput) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*e = embedInput{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return jsonbody.TypeError(b, reflect.TypeFor[[]string]())
	}
	*e = many
	return nil
}

type embedRequest struct {
	Model      string     `json:"model"`
	Name       string     `json:"name"`
	Input      embedInput `json:"input"`
	Prompt     string     `json:"prompt"` // /api/embeddings
	Dimensions int        `json:"dimensions"`
	KeepAlive  *keepAlive `json:"keep_alive"`
	// InputType is npud's, as on /v1/embeddings: the kind of the inputs,
	// whose prompt the model's folder puts before each.
	InputType string `json:"input_type"`
	// Truncate is Ollama's: cut an input longer than the model takes to
	// fit (nil: true, Ollama's default); false refuses such an input.
	Truncate *bool `json:"truncate"`
}

func (r *embedRequest) model() string {
	if r.Model != "" {
		return r.Model
	}
	return r.Name
}

// embedWith runs the embedding and answers errors itself.
func (a *API) embedWith(c *gin.Context, req *embedRequest, inputs []string) ([][]float32, int, time.Duration, bool) {
	info := reqinfo.From(c.Request.Context())
	// A few bytes of input each give kilobytes of vector and engine time:
	// bound the count, so a small body cannot ask for a huge answer.
	if n := a.cfg.MaxEmbedInputs; n > 0 && len(inputs) > n {
		a.fail(c.Writer, info, badRequest("input has %d items: at most %d per request (max-embed-inputs)", len(inputs), n))
		return nil, 0, 0, false
	}
	start := time.Now()
	truncate := req.Truncate == nil || *req.Truncate
	embedded, err := a.router.Embed(c.Request.Context(), npu.EmbedRequest{Model: req.model(), Inputs: inputs, InputType: req.InputType,
		Truncate: truncate, Tenant: info.Tenant, KeepAlive: req.KeepAlive.duration(), MayUnpin: info.ManagesModels})
	vectors, tokens := embedded.Vectors, embedded.PromptTokens
	if errors.Is(err, npu.ErrNotSupported) {
		a.fail(c.Writer, info, badRequest("%v", err)) // the model cannot do this: a bad request, not a server fault
		return nil, 0, 0, false
	}
	if err != nil {
		a.fail(c.Writer, info, a.toError(err))
		return nil, 0, 0, false
	}
	if req.Dimensions < 0 || (len(vectors) > 0 && req.Dimensions > len(vectors[0])) {
		a.fail(c.Writer, info, badRequest("dimensions %d is outside what model %q gives (1 to %d)", req.Dimensions, req.model(), len(vectors[0])))
		return nil, 0, 0, false
	}
	npu.ShortenEmbeddings(vectors, req.Dimensions)
	if truncate {
		c.Header(reqinfo.TruncatedInputsHeader, strconv.Itoa(embedded.Truncated))
	}
	if a.router.Simulated() {
		// Say so where a client can see it: the vectors carry no meaning.
		c.Header("X-Npud-Simulated", "true")
	}
	return vectors, tokens, time.Since(start), true
}

func (a *API) embed(c *gin.Context) {
	var req embedRequest
	if _, _, ok := a.decodeModel(c, &req, req.model); !ok {
		return
	}
	vectors, tokens, took, ok := a.embedWith(c, &req, req.Input)
	if !ok {
		return
	}
	if vectors == nil {
		vectors = [][]float32{}
	}
	c.JSON(http.StatusOK, gin.H{"model": req.model(), "embeddings": vectors,
		"total_duration": took.Nanoseconds(), "load_duration": 0, "prompt_eval_count": tokens})
}

// embeddings is the legacy single-prompt endpoint.
func (a *API) embeddings(c *gin.Context) {
	var req embedRequest
	if _, _, ok := a.decodeModel(c, &req, req.model); !ok {
		return
	}
	if req.Prompt == "" {
		c.JSON(http.StatusOK, gin.H{"embedding": []float32{}})
		return
	}
	vectors, _, _, ok := a.embedWith(c, &req, []string{req.Prompt})
	if !ok {
		return
	}
	c.JSON(http.StatusOK, gin.H{"embedding": vectors[0]})
}

// pull streams the registry's progress as NDJSON lines ending with
// {"status":"success"}; a failure after the first line is an error line.
func (a *API) pull(c *gin.Context) {
	var req nameRequest
	_, id, ok := a.decodeModel(c, &req, req.model)
	if !ok {
		return
	}
	info := reqinfo.From(c.Request.Context())
	stream := req.Stream == nil || *req.Stream
	w := streamwriter.New(c.Writer, a.cfg.WriteTimeout)
	line := func(v any) {
		if !stream {
			return
		}
		if !w.Committed() {
			w.Commit("application/x-ndjson")
		}
		b, _ := json.Marshal(v)            // maps of strings and numbers always encode
		_ = w.Write(append(b, '\n'), true) // a client that left just misses progress
	}
	err := a.router.Pull(c.Request.Context(), id, func(p npu.PullProgress) {
		if p.Digest == "" {
			line(gin.H{"status": p.Status})
			return
		}
		line(gin.H{"status": p.Status, "digest": p.Digest, "total": p.Total, "completed": p.Completed})
	})
	switch {
	case err != nil && w.Committed():
		info.Error = err.Error()
		line(gin.H{"error": err.Error()})
	case err != nil:
		a.fail(c.Writer, info, a.toError(err))
	case stream:
		line(gin.H{"status": "success"})
	default:
		c.JSON(http.StatusOK, gin.H{"status": "success"})
	}
}

func (a *API) deleteModel(c *gin.Context) {
	var req nameRequest
	_, id, ok := a.decodeModel(c, &req, req.model)
	if !ok {
		return
	}
	if err := a.router.Delete(c.Request.Context(), id); err != nil {
		a.fail(c.Writer, reqinfo.From(c.Request.Context()), a.toErrorNoPull(err))
		return
	}
	c.Status(http.StatusOK)
}

func (a *API) copyModel(c *gin.Context) {
	var req struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	info := reqinfo.From(c.Request.Context())
	if err := jsonbody.Decode(c.Request, &req); err != nil {
		a.fail(c.Writer, info, bodyError(err))
		return
	}
	if req.Source == "" || req.Destination == "" {
		a.fail(c.Writer, info, badRequest("source and destination are required"))
		return
	}
	info.Model = req.Source
	if err := a.router.Copy(c.Request.Context(), req.Source, req.Destination); err != nil {
		a.fail(c.Writer, info, a.toError(err))
		return
	}
	c.Status(http.StatusOK)
}
