//go:build cgo

package openvino

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
	"github.com/npud/npud/npu/modelstore"
)

// Config sets up the engine.
type Config struct {
	// Library is the loaded OpenVINO GenAI C library (OpenLibrary).
	Library *Library
	// ModelsDir holds one OpenVINO IR export per subfolder; the folder's
	// name is the model's name.
	ModelsDir string
	// Device is AUTO (NPU, then GPU, then CPU, falling back when a model
	// fails to compile) or a device name: NPU, GPU, GPU.1, CPU.
	Device string
	// ContextLength is reported for every model (GenAI's C API cannot read
	// it from the model).
	ContextLength int
	// NPU properties, passed to pipelines compiled for the NPU.
	MaxPromptLen   int    // MAX_PROMPT_LEN; 0 = GenAI's default (1024)
	MinResponseLen int    // MIN_RESPONSE_LEN; 0 = GenAI's default (128)
	PrefillHint    string // PREFILL_HINT: DYNAMIC or STATIC; "" = GenAI's default
	GenerateHint   string // GENERATE_HINT: FAST_COMPILE or BEST_PERF; "" = GenAI's default
	// PrefillChunkSize is NPUW_LLM_PREFILL_CHUNK_SIZE; 0 = NPUW's (1024).
	PrefillChunkSize int
	// PrefixCaching sets NPUW_LLM_ENABLE_PREFIX_CACHING=YES: NPUW keeps the
	// KV cache of prompt blocks it computed and restores a prompt's leading
	// blocks it has seen (only when prefill is chunked).
	PrefixCaching bool
	CacheDir      string // CACHE_DIR, so the slow first NPU compile happens once
	// OperatorSet names the properties above that the operator's
	// configuration set rather than left at npud's defaults: a model
	// folder's PropertiesFile does not override them.
	OperatorSet []string
	// Hub fetches models for pull; nil disables pulling.
	Hub *hub.Client
	// OnCompile, when set, is told each device a model is about to be
	// compiled for: a worker process reports it, so that a crash during the
	// compile is charged to that device.
	OnCompile func(model, device string)
}

// What the OpenVINO engine offers a pool, checked at compile time.
var (
	_ npu.Engine   = (*Engine)(nil)
	_ npu.Registry = (*Engine)(nil)
)

// Engine runs OpenVINO GenAI pipelines, one per loaded model.
type Engine struct {
	npu.Unsupported // what the engine does not do (Describe)

	cfg     Config
	log     *slog.Logger
	devices []Device
	catalog *modelstore.Catalog // the models folder: listing, pull, copy, delete

	mu        sync.Mutex
	pipelines map[string]*pipeline
	// openCounter opens a model's tokenizer for counting its prompts; nil:
	// GenAI renders every model's prompts.
	openCounter func(ctx context.Context, dir string) (tokenCounter, error)
}

// New discovers the devices and the models directory.
func New(cfg Config, log *slog.Logger) (*Engine, error) {
	if cfg.ContextLength == 0 {
		cfg.ContextLength = 4096
	}
	if cfg.Library == nil {
		return nil, errors.New("openvino: no library (OpenLibrary loads it)")
	}
	devices, err := cfg.Library.Devices()
	if err != nil {
		return nil, fmt.Errorf("listing OpenVINO devices: %w", err)
	}
	if _, err := candidates(cfg.Device, devices); err != nil {
		return nil, err
	}
	cfg.ContextLength = ReportedContext(cfg)
	catalog, err := modelstore.OpenCatalog(modelstore.New(cfg.ModelsDir, cfg.Hub), ModelLimits(cfg))
	if err != nil {
		return nil, err
	}
	log.Info("openvino engine ready", "library", cfg.Library.GenAIPath, "version", cfg.Library.Build, "devices", names(devices), "device", cfg.Device, "models", len(catalog.Models()))
	lib := cfg.Library
	return &Engine{cfg: cfg, log: log, devices: devices, catalog: catalog, pipelines: map[string]*pipeline{},
		openCounter: func(ctx context.Context, dir string) (tokenCounter, error) {
			return lib.OpenTokenizer(ctx, dir, TokenizerOptions{})
		}}, nil
}

func (e *Engine) Name() string            { return "openvino" }
func (e *Engine) Simulated() bool         { return false }
func (e *Engine) Models() []npu.ModelInfo { return e.catalog.Models() }

// Describe implements npu.Engine. Prompts are counted exactly for the
// models whose prompts npud renders (CountPrompt: the model's tokenizer
// through the core C API; GenAI's C API has none); speech models
// transcribe (a library without the Whisper functions fails their load,
// naming what it lacks); embedding models embed through OpenVINO's core C
// API when the library has what that needs (embed.go), and cross-encoders
// rerank the same way (rerank.go).
func (e *Engine) Describe() npu.Features {
	core := e.cfg.Library.embeddingSupport() == nil
	return npu.Features{LoadsModels: true, Reloads: true, Transcribes: true, ExactCounts: true,
		Embeds: core, Reranks: core}
}

// DeviceNames implements npu.Engine.
func (e *Engine) DeviceNames() map[string]string {
	out := make(map[string]string, len(e.devices))
	for _, d := range e.devices {
		out[d.Name] = d.FullName
	}
	return out
}

// DeviceOf is the device model is loaded on, or "".
func (e *Engine) DeviceOf(model string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.pipelines[model]; ok {
		return p.device
	}
	return ""
}

// properties are what a pipeline for the model in dir is compiled with on
// device: the engine's settings, then the model folder's properties file
// (modelstore.PropertiesFile, which may set only what a folder may: it
// fails the load otherwise, naming each property and why), which wins for
// the keys it names over npud's defaults, never over the operator's
// configuration.
func (e *Engine) properties(dir, device string) ([]property, error) {
	var props []property
	// Not for a speech model: GenAI's Whisper pipeline passes its
	// properties to the plugins as they are (src/c/src/whisper_pipeline.cpp
	// converts none), so MAX_PROMPT_LEN and MIN_RESPONSE_LEN would reach
	// pop_int_and_cast as strings, which it refuses, and PREFILL_HINT,
	// GENERATE_HINT and NPUW_LLM_*, which update_npu_config_whisper
	// (src/cpp/src/utils.cpp) neither renames nor sets, would be unknown to
	// the NPU plugin. GenAI sizes Whisper's NPU decoder itself: a prompt of
	// 4 tokens and a KV cache of 448 (utils.cpp: get_npu_model_config).
	if deviceKind(device) == "NPU" && !modelstore.IsSpeechModel(dir) { // also NPU.0, NPU.1
		if e.cfg.MaxPromptLen > 0 {
			props = append(props, property{"MAX_PROMPT_LEN", strconv.Itoa(e.cfg.MaxPromptLen)})
		}
		if e.cfg.MinResponseLen > 0 {
			props = append(props, property{"MIN_RESPONSE_LEN", strconv.Itoa(e.cfg.MinResponseLen)})
		}
		if e.cfg.PrefillHint != "" && !forcesStaticPrefill(dir) {
			props = append(props, property{"PREFILL_HINT", e.cfg.PrefillHint})
		}
		if e.cfg.GenerateHint != "" {
			props = append(props, property{"GENERATE_HINT", e.cfg.GenerateHint})
		}
		if e.cfg.PrefillChunkSize > 0 {
			props = append(props, property{"NPUW_LLM_PREFILL_CHUNK_SIZE", strconv.Itoa(e.cfg.PrefillChunkSize)})
		}
		if e.cfg.PrefixCaching {
			props = append(props, property{"NPUW_LLM_ENABLE_PREFIX_CACHING", "YES"})
		}
	}
	if e.cfg.CacheDir != "" {
		props = append(props, property{"CACHE_DIR", e.cfg.CacheDir})
	}
	own, err := modelstore.ReadProperties(dir)
	if err != nil {
		return nil, err
	}
	for _, o := range own {
		if slices.Contains(e.cfg.OperatorSet, o.Key) {
			e.log.Info("a model folder's property is not used: the operator's configuration sets it",
				"model", filepath.Base(dir), "property", o.Key, "folder_value", o.Value)
			continue
		}
		props = slices.DeleteFunc(props, func(p property) bool { return p.key == o.Key })
		props = append(props, property{o.Key, o.Value})
	}
	return props, nil
}

// forcesStaticPrefill: GenAI compiles this model's language model with
// NPUW_LLM_PREFILL_HINT=STATIC (Gemma3 vision models, whose inputs NPUW
// cannot chunk: visual_language/pipeline.cpp update_npu_properties), and a
// PREFILL_HINT from npud would replace it (utils.cpp: rename_key), after
// which NPUW refuses to compile ("Chunking is not implemented for Gemma
// model family yet", llm_compiled_model.cpp). So the engine's hint is not
// passed for it.
func forcesStaticPrefill(dir string) bool {
	return modelstore.HasVisionEncoder(dir) && modelstore.Describe(dir, filepath.Base(dir)).Architecture == "gemma3"
}

// compile builds the pipeline of the model in dir for device. An indexed
// NPU ("NPU.0") is compiled as "NPU": GenAI converts MAX_PROMPT_LEN and
// MIN_RESPONSE_LEN to integers only for the device named exactly "NPU"
// (src/c/src/llm_pipeline.cpp, vlm_pipeline.cpp) and throws on the string
// otherwise (src/cpp/src/utils.cpp: pop_int_and_cast), and its NPU path
// compiles on "NPU", the default NPU, whatever index was named
// (compile_decoder_for_npu_impl). So only the first NPU can be named; any
// other is refused, saying why.
func (e *Engine) compile(ctx context.Context, dir, device string) (*pipeline, error) {
	if ir, err := modelstore.ReadEmbeddingIR(dir); err == nil {
		return e.compileEmbedder(ctx, dir, device, ir)
	}
	if ir, err := modelstore.ReadRerankIR(dir); err == nil {
		return e.compileReranker(ctx, dir, device, ir)
	}
	target := device
	if deviceKind(device) == "NPU" && device != "NPU" {
		first := ""
		for _, d := range e.devices {
			if deviceKind(d.Name) == "NPU" {
				first = d.Name
				break
			}
		}
		if device != first {
			return nil, fmt.Errorf("device %s: OpenVINO GenAI compiles language models for the default NPU (%s) whatever index is named, "+
				"so only that one can run them: use --device NPU", device, first)
		}
		target = "NPU"
	}
	props, err := e.properties(dir, device)
	if err != nil {
		return nil, err
	}
	prompt := e.prompterFor(ctx, dir)
	from := dir
	if prompt != nil {
		from = prompt.view
	}
	p, err := newPipeline(e.cfg.Library.api, from, target, props)
	if err != nil {
		if prompt != nil {
			_ = prompt.close() // no pipeline to serve
		}
		if tok := e.cfg.Library.TokenizersErr; tok != nil {
			return nil, fmt.Errorf("%w (likely why: %w)", err, tok) // GenAI says only -17
		}
		return nil, err
	}
	p.model, p.device, p.prompt = dir, device, prompt
	if deviceKind(device) == "NPU" && p.whisper == nil {
		// What GenAI was given decides its prompt check and KV cache.
		p.promptLimit, p.responseLen = 1024, 128
		for _, pr := range props {
			if n, err := strconv.Atoi(pr.value); err == nil && n >= 0 {
				switch pr.key {
				case "MAX_PROMPT_LEN":
					p.promptLimit = n
				case "MIN_RESPONSE_LEN":
					p.responseLen = n
				}
			}
		}
	}
	return p, nil
}

// prompterFor is the prompter of the language model in dir, nil when
// GenAI renders its prompts (the log says why).
func (e *Engine) prompterFor(ctx context.Context, dir string) *prompter {
	if modelstore.IsSpeechModel(dir) {
		return nil
	}
	pr, why, err := newPrompter(ctx, dir, e.openCounter)
	if err != nil {
		e.log.Warn("GenAI renders the model's prompts: npud cannot count them", "model", filepath.Base(dir), "err", err)
		return nil
	}
	if pr == nil {
		e.log.Info("GenAI renders the model's prompts", "model", filepath.Base(dir), "why", why)
		return nil
	}
	e.log.Info("npud renders the model's prompts", "model", filepath.Base(dir), "template", pr.template.Name)
	return pr
}

// Load implements npu.Engine: it compiles the model for the configured
// device, or under AUTO for the first device that takes it.
func (e *Engine) Load(ctx context.Context, model string) error {
	return e.LoadAvoiding(ctx, model, nil)
}

// LoadAvoiding is Load under AUTO without the devices in avoid (ones that
// crashed or hung); a device named in the configuration is never avoided.
func (e *Engine) LoadAvoiding(ctx context.Context, model string, avoid []string) error {
	e.mu.Lock()
	_, loaded := e.pipelines[model]
	e.mu.Unlock()
	if loaded {
		return nil
	}
	devices, err := candidates(e.cfg.Device, e.devices)
	if err != nil {
		return err
	}
	if e.cfg.Device == "" || e.cfg.Device == "AUTO" {
		// Unhealthy devices go last, not away: when every device is
		// unhealthy, trying one beats serving nothing.
		healthy := slices.DeleteFunc(slices.Clone(devices), func(d string) bool { return slices.Contains(avoid, d) })
		for _, d := range devices {
			if slices.Contains(avoid, d) {
				healthy = append(healthy, d)
			}
		}
		devices = healthy
	}
	// Compiling takes minutes on an NPU: the engine mutex is not held
	// meanwhile, so other models' generations go on. The router makes sure
	// one model is loaded by one caller at a time.
	dir := filepath.Join(e.cfg.ModelsDir, model)
	var errs []error
	for _, device := range devices {
		if e.cfg.OnCompile != nil {
			e.cfg.OnCompile(model, device)
		}
		p, err := e.compile(ctx, dir, device)
		if err == nil {
			e.mu.Lock()
			e.pipelines[model] = p
			e.mu.Unlock()
			e.log.Info("model compiled", "model", model, "device", device)
			return nil
		}
		errs = append(errs, err)
		e.log.Warn("model failed to compile; trying the next device", "model", model, "device", device, "err", err)
	}
	return fmt.Errorf("no device could load model %q: %w", model, errors.Join(errs...))
}

// Reload implements npu.Engine: it compiles the model folder again on the
// device the model runs on, and swaps the new pipeline in only when that
// worked; on failure the old pipeline keeps serving. The router holds the
// engine slot, so no generation uses the old pipeline meanwhile.
func (e *Engine) Reload(ctx context.Context, model string) error {
	e.mu.Lock()
	old, ok := e.pipelines[model]
	e.mu.Unlock()
	if !ok {
		return e.Load(ctx, model)
	}
	// Compiling takes long on an NPU; the engine mutex is not held meanwhile.
	p, err := e.compile(ctx, filepath.Join(e.cfg.ModelsDir, model), old.device)
	if err != nil {
		return fmt.Errorf("compiling the new %q on %s: %w", model, old.device, err)
	}
	e.mu.Lock()
	e.pipelines[model] = p
	e.mu.Unlock()
	if err := old.free(); err != nil {
		e.log.Error("the replaced pipeline is still generating and was not freed", "model", model, "err", err)
	}
	e.log.Info("model reloaded", "model", model, "device", p.device)
	return nil
}

// Unload implements npu.Engine.
func (e *Engine) Unload(model string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.pipelines[model]; ok {
		if err := p.free(); err != nil {
			return err
		}
		delete(e.pipelines, model)
	}
	return nil
}

func (c *Config) maxPromptLen() int {
	if c.MaxPromptLen > 0 {
		return c.MaxPromptLen
	}
	return 1024 // GenAI's default
}

func (c *Config) minResponseLen() int {
	if c.MinResponseLen > 0 {
		return c.MinResponseLen
	}
	return 128 // GenAI's default
}

// ReportedContext is the context length the engine reports for its
// models under cfg: on the NPU its KV cache, whatever the model was trained
// for; elsewhere cfg.ContextLength (4096 when unset).
func ReportedContext(cfg Config) int {
	if deviceKind(cfg.Device) == "NPU" {
		return cfg.npuKVCapacity()
	}
	if cfg.ContextLength == 0 {
		return 4096
	}
	return cfg.ContextLength
}

// ModelLimits is what the engine's models report under cfg: on the NPU
// each model's KV cache and prompt limit (its own properties file may set
// them), elsewhere the context the model was trained for (config.json) at
// most cfg's context, which bounds what a model may hold.
func ModelLimits(cfg Config) modelstore.Limits {
	if deviceKind(cfg.Device) == "NPU" {
		return modelstore.NPULimits(cfg.MaxPromptLen, cfg.MinResponseLen, cfg.OperatorSet)
	}
	bound := ReportedContext(cfg)
	return func(dir string) (int, int) {
		if own := modelstore.ModelContext(dir); own > 0 && own < bound {
			return own, 0
		}
		return bound, 0
	}
}

// npuKVCapacity is how many tokens the NPU pipeline's KV cache holds, prompt
// and answer together: GenAI's get_npu_kv_cache_capacity, MAX_PROMPT_LEN +
// MIN_RESPONSE_LEN − 1. Generation stops quietly, with OK, when it is full.
func (c *Config) npuKVCapacity() int { return c.maxPromptLen() + c.minResponseLen() - 1 }

// contextOf is the context a pipeline can use: on the NPU its KV cache,
// elsewhere the model's config.json at most the configured context length
// (what ModelLimits reports).
func (e *Engine) contextOf(p *pipeline) int {
	switch {
	case deviceKind(p.device) == "NPU":
		return p.promptLimit + p.responseLen - 1
	case p.context > 0 && p.context < e.cfg.ContextLength:
		return p.context
	}
	return e.cfg.ContextLength
}

// Close frees every pipeline.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, p := range e.pipelines {
		if err := p.free(); err != nil {
			e.log.Error("closing the engine", "model", name, "err", err)
			continue
		}
		delete(e.pipelines, name)
	}
}

// Generate implements npu.Engine. The router has loaded the model.
func (e *Engine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	e.mu.Lock()
	p, ok := e.pipelines[req.Model]
	e.mu.Unlock()
	if !ok {
		return npu.Result{}, fmt.Errorf("model %q is not loaded: %w", req.Model, npu.ErrModelNotFound)
	}
	if p.whisper != nil {
		return npu.Result{}, npu.CheckGenerates(npu.ModelInfo{ID: req.Model, Details: npu.ModelDetails{SpeechOnly: true}})
	}
	if p.rerank != nil {
		return npu.Result{}, npu.CheckGenerates(npu.ModelInfo{ID: req.Model, Details: npu.ModelDetails{RerankOnly: true}})
	}
	if p.embed != nil {
		return npu.Result{}, npu.CheckGenerates(npu.ModelInfo{ID: req.Model, Details: npu.ModelDetails{EmbeddingOnly: true}})
	}
	if p.prompt != nil {
		return e.generateRendered(ctx, p, req, sink)
	}
	// Without max_tokens GenAI would generate up to SIZE_MAX tokens: cap at
	// the context (the prompt's share of it is not known beforehand, see
	// docs/OPENVINO.md).
	limit := e.contextOf(p)
	// npu.CompletionLimit's rule needs the prompt's token count, which the
	// C API gives only after generating: before, the prompt counts as one
	// token (GenAI would otherwise generate max_tokens past the context on
	// CPU and GPU; the NPU stops at its KV cache); after, the clamp is
	// reported with the real count.
	asked := req.MaxTokens
	if n, lowered, _ := npu.CompletionLimit(asked, 1, limit); lowered {
		capped := *req
		capped.MaxTokens = n
		req = &capped
	}
	res, err := p.generate(ctx, req, sink, limit)
	onNPU := deviceKind(p.device) == "NPU"
	// The C API cannot count tokens beforehand: when the NPU refuses the
	// history before any output and it may be over the prompt limit, drop
	// the oldest turns and try again: one turn, then twice as many each
	// time, and at last as many as make it surely fit, a bounded number of
	// times (each try costs a templating and a failed check, no
	// generation).
	drop := 1
	for tries := 0; err != nil && req.DropOldestTurns && onNPU && tries < maxDropRetries; tries++ {
		if !p.mayBeOverLimit(req, err) {
			break
		}
		shorter, ok := dropOldestTurns(req.Messages, drop)
		if !ok {
			break
		}
		if tries == maxDropRetries-1 {
			shorter = fitting(req.Messages, p.promptLimit)
		}
		drop *= 2
		trimmed := *req
		trimmed.Messages = shorter
		req = &trimmed
		e.log.Debug("history over MAX_PROMPT_LEN: dropped the oldest turns", "model", req.Model, "messages", len(shorter))
		res, err = p.generate(ctx, req, sink, limit)
	}
	if err != nil {
		var invalid *npu.InvalidRequestError
		if errors.As(err, &invalid) {
			return res, err // the request's fault: a 400
		}
		if onNPU && p.mayBeOverLimit(req, err) {
			// GenAI gives no reason. The request was validated against
			// GenAI's rules before (npu.Request.Validate), the template
			// checked at compile time, and what the prompt can count
			// bounded (mayBeOverLimit): what is left for a generate that
			// fails before any output is the templated prompt over
			// MAX_PROMPT_LEN (the C API has no tokenizer to count
			// beforehand): a request error.
			return res, fmt.Errorf("the prompt (%d bytes of text, %d messages) does not fit the NPU's MAX_PROMPT_LEN of %d tokens "+
				"(raise it with --npu-max-prompt-len or the model's %s; OpenVINO gave no further reason: %w): %w",
				promptChars(req), len(req.Messages), p.promptLimit, modelstore.PropertiesFile, err, npu.ErrContextLength)
		}
		return res, &npu.EngineError{Engine: "openvino", Cause: err}
	}
	if onNPU && res.FinishReason == npu.FinishStop && res.PromptTokens+res.CompletionTokens >= limit {
		// The KV cache filled up: GenAI stopped quietly, with OK.
		res.FinishReason = npu.FinishLength
	}
	if n, lowered, err := npu.CompletionLimit(asked, res.PromptTokens, limit); err == nil && lowered {
		res.MaxTokensClamped = n
	}
	return res, nil
}

// Pull implements npu.Registry: name is a hub repository (owner/name); the
// model is named after its last element.
func (e *Engine) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	return e.catalog.Pull(ctx, name, progress)
}

// Delete implements npu.Registry: it removes the model's folder.
func (e *Engine) Delete(_ context.Context, name string) error {
	if !e.catalog.Has(name) {
		return fmt.Errorf("model %q: %w", name, npu.ErrModelNotFound)
	}
	// The lifecycle unloads before it deletes (serve.Router.Delete); a pipeline
	// still here means someone skipped it, and freeing it now could pull it
	// from under a generation.
	e.mu.Lock()
	_, loaded := e.pipelines[name]
	e.mu.Unlock()
	if loaded {
		return fmt.Errorf("model %q is loaded: unload it through the router before deleting its files", name)
	}
	return e.catalog.Delete(name)
}

// Copy implements npu.Registry: it copies the model's folder under a new
// name, complete or not at all.
func (e *Engine) Copy(ctx context.Context, source, destination string) error {
	return e.catalog.Copy(ctx, source, destination)
}

// promptChars is the length of what the client sent as its prompt, for
// messages where the token count is not known.
func promptChars(req *npu.Request) int {
	n := len(req.Prompt)
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	return n
}

// Template overhead allowances for mayExceed: chat templates add a few
// tokens per message and some a default system text (Llama 3.1's dates).
const (
	templateTokensPerMessage = 16
	templateTokensFixed      = 256
)

// mayExceed reports whether req's templated prompt could be over limit
// tokens. A token covers at least one byte of text (byte-level BPE, or
// SentencePiece's byte fallback), so text of n bytes is at most about n
// tokens plus what the template adds. A failure before output on a prompt
// that cannot be over the limit is not the prompt's fault: an engine error.
func mayExceed(req *npu.Request, limit int) bool {
	return promptChars(req)+templateTokensPerMessage*(len(req.Messages)+1)+templateTokensFixed >= limit
}

// maxDropRetries bounds the retries of a history over the NPU's prompt
// limit: 1, 2, 4, 8 turns dropped, then as many as make it surely fit.
const maxDropRetries = 5

// mayBeOverLimit: a generate that failed with err may have failed for a
// prompt over the NPU's limit: it failed before any output, and what its
// prompt can count may exceed the limit, by its bytes or, when it continues
// the history GenAI counted last, by that count.
func (p *pipeline) mayBeOverLimit(req *npu.Request, err error) bool {
	var se *StatusError
	if !errors.As(err, &se) || !se.BeforeOutput || !mayExceed(req, p.promptLimit) {
		return false
	}
	if n, ok := p.counted.upperBound(req.Messages); ok && n < p.promptLimit {
		return false
	}
	return true
}

// dropOldestTurns removes the n oldest messages that are neither system
// messages nor the last one; ok is false when there is none to drop.
func dropOldestTurns(msgs []npu.Message, n int) (_ []npu.Message, ok bool) {
	out := make([]npu.Message, 0, len(msgs))
	dropped := 0
	for i, m := range msgs {
		if dropped < n && i < len(msgs)-1 && m.Role != "system" {
			dropped++
			continue
		}
		out = append(out, m)
	}
	return out, dropped > 0
}

// fitting drops the oldest turns until the rest cannot be over limit
// tokens (mayExceed), keeping system messages and the last one.
func fitting(msgs []npu.Message, limit int) []npu.Message {
	for {
		shorter, ok := dropOldestTurns(msgs, 1)
		if !ok || !mayExceed(&npu.Request{Messages: msgs}, limit) {
			return msgs
		}
		msgs = shorter
	}
}
