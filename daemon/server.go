// Package daemon runs npud: configuration, the HTTP server and its
// middleware, health, and the lifecycle from listening to a graceful drain.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/anthropicapi"
	"github.com/npud/npud/daemon/console"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
	"github.com/npud/npud/npu/modelstore"
	"github.com/npud/npud/npu/serve"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/npu/worker"
	"github.com/npud/npud/ollamaapi"
	"github.com/npud/npud/openaiapi"
	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/membudget"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/route"
	"github.com/npud/npud/wire/wsconn"
	"github.com/npud/npud/wsapi"
)

// Server is one running npud: a listener, an HTTP server and the router
// that feeds it.
type Server struct {
	cfg Config
	// audioDecoder is ffmpeg for the audio formats npud does not decode
	// itself (--audio-decoder); nil without it.
	audioDecoder *audioin.External
	log          *slog.Logger
	router       *serve.Router
	ln           net.Listener
	http         *http.Server
	started      time.Time
	// handlers is the parent of every request context. It is not the
	// shutdown signal: a drain lets requests finish, and only an expired
	// drain cancels them.
	handlers       context.Context
	cancelHandlers context.CancelFunc
	draining       chan struct{}

	// policy is what requests are checked against (keys, hosts, origins,
	// body limits); SIGHUP swaps it.
	policy       atomic.Pointer[policy]
	authFailures *authThrottle // failed authentications per client address
	keyRequests  keyRequests   // HTTP requests in flight per API key, ended when it is revoked
	metrics      *metrics
	logLevel     *slog.LevelVar // nil when the logger's level is fixed
	reloadMu     sync.Mutex     // one reload at a time
	running      Config         // the configuration in effect, reloads included; under reloadMu
	openai       *openaiapi.API
	ws           *wsapi.API
	wsConns      *wsconn.Hub // every WebSocket connection, whichever API serves it
	ollama       *ollamaapi.API
	anthropic    *anthropicapi.API
	routeTable   route.Table    // what each API declares its routes do; set before serving
	requests     sync.WaitGroup // every request, until its access-log line is written
	simReason    string         // why the simulated engine serves, when it does
}

// Option adjusts a Server; tests use it to inject an engine.
type Option func(*options)

type options struct {
	engine   npu.Engine
	listener net.Listener
	logLevel *slog.LevelVar
}

// WithEngine serves engine instead of the one cfg.Engine names.
func WithEngine(e npu.Engine) Option { return func(o *options) { o.engine = e } }

// WithListener serves on ln (an inherited, socket-activated listener)
// instead of listening on cfg.Listen.
func WithListener(ln net.Listener) Option { return func(o *options) { o.listener = ln } }

// WithLogLevel lets a reload change the logger's level.
func WithLogLevel(lv *slog.LevelVar) Option { return func(o *options) { o.logLevel = lv } }

// New builds a server and binds its listener, so Addr is known at once.
func New(cfg Config, log *slog.Logger, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	engine, simReason := o.engine, ""
	if engine == nil {
		var err error
		if engine, simReason, err = newEngine(cfg, log); err != nil {
			return nil, err
		}
	}
	m := newMetrics(engine)
	stream := serve.StreamLimits{
		MaxPendingBytes: cfg.MaxPendingBytes,
		TokenTimeout:    cfg.TokenTimeout,
		Heartbeat:       cfg.Heartbeat,
	}
	if w, ok := engine.(isolatedEngine); ok {
		// The workers' watchdog owns the token and prefill timeouts: it
		// can stop a native call (by killing its process), the bridge
		// cannot.
		stream.TokenTimeout = 0
		w.SetObserver(m)
	}
	// The models folder belongs to the daemon: the engine that serves from
	// one (OpenVINO's catalog, the workers' catalog, --engine auto's
	// folder) hands it over here, and the local pool takes it as data.
	folder, _ := engine.(npu.Registry)
	var store npu.Registry
	if sw, ok := engine.(*switchingEngine); ok {
		// The OpenVINO engine it may start runs as configured from the
		// start: in workers, the watchdog's timeouts (the simulated
		// engine before it never stalls).
		if isolated(cfg, "openvino") {
			stream.TokenTimeout = 0
		}
		sw.observer, sw.onChange = m, m.describeEngine
	} else if folder == nil && o.engine == nil {
		store = simFolder{newModelsFolder(cfg)} // --engine sim: pulls still fill the models folder
	}
	pc := serve.PoolConfig{
		MaxQueue:         cfg.MaxQueue,
		QueueTimeout:     cfg.QueueTimeout,
		DefaultKeepAlive: cfg.KeepAlive,
		MaxLoadedModels:  cfg.MaxLoadedModels,
		Observer:         m,
		Slots:            engineSlots(cfg, engine),
		Affinity: serve.Affinity{
			MaxOvertakes: cfg.AffinityMaxOvertakes,
			MaxWait:      cfg.AffinityMaxWait,
			Linger:       cfg.AffinityLinger,
		},
		Stream:       stream,
		Models:       folder,
		Store:        store,
		CompileCache: compileCacheFor(cfg, engine, log),
		Device:       cfg.Device,
	}
	local := serve.NewPool(engine, pc, log)
	pc.Stream.TokenTimeout = cfg.TokenTimeout // an upstream's stream is read by the bridge, whatever the local engine
	upstreams, err := startUpstreams(cfg, os.Getenv, pc, log)
	if err != nil {
		return nil, err
	}
	router := serve.NewRouter(local, serve.RouterConfig{Aliases: cfg.Aliases, Upstreams: upstreams,
		OverflowAfter: cfg.OverflowAfter, Limits: tenantLimits(cfg), Observer: m}, log)
	m.watch(router)
	audioDecoder, err := audioin.FindExternal(cfg.AudioDecoder)
	if err != nil {
		return nil, err
	}
	if audioDecoder != nil {
		log.Debug("audio: Opus, WebM, M4A and AAC uploads are decoded by ffmpeg", "path", audioDecoder.Path)
	}
	ln := o.listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil { //nolint:noctx // New takes no context yet (see serveUntil)
			return nil, listenError(cfg.Listen, err)
		}
	}
	if cfg.TLSCert != "" {
		// Fail at start, not at the first handshake.
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("loading the TLS certificate and key: %w", err)
		}
	}
	pol, err := newPolicy(cfg, ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	handlers, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, log: log, router: router, ln: ln, started: time.Now(),
		handlers: handlers, cancelHandlers: cancel, draining: make(chan struct{}),
		metrics: m, logLevel: o.logLevel, simReason: simReason,
		audioDecoder: audioDecoder,
	}
	s.running = cfg
	s.policy.Store(pol)
	s.authFailures = newAuthThrottle(maxThrottledAddrs)
	s.authFailures.configure(cfg.AuthFailureLimit)
	s.http = &http.Server{
		Handler:           s.routes(),
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return handlers },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// engineSlots is how many generations the engine runs at once: one for a
// real engine, --sim-slots for the simulated one.
func engineSlots(cfg Config, engine npu.Engine) int {
	if engine.Simulated() {
		return cfg.SimSlots
	}
	return 1
}

// newEngine starts the engine cfg.Engine names. Under auto it says why
// it chose the simulated engine, when it did.
func newEngine(cfg Config, log *slog.Logger) (engine npu.Engine, simReason string, err error) {
	simulated := func() npu.Engine {
		return sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL, PromptTokenCost: cfg.SimPromptTokenCost})
	}
	switch cfg.Engine {
	case "sim":
		if isolated(cfg, "sim") {
			engine, err := newWorkerEngine(cfg, "sim", log)
			return engine, "--engine sim", err
		}
		return simulated(), "--engine sim", nil
	case "openvino":
		if isolated(cfg, "openvino") {
			path, err := findLibrary(cfg)
			if err != nil {
				return nil, "", fmt.Errorf("--engine openvino: %w", err)
			}
			cfg.OpenVINOLib = path // the workers load what the daemon found
			engine, err := newWorkerEngine(cfg, "openvino", log)
			if err != nil {
				return nil, "", fmt.Errorf("--engine openvino: %w", err)
			}
			return engine, "", nil
		}
		engine, err := newOpenVINOEngine(cfg, log)
		if err != nil {
			return nil, "", fmt.Errorf("--engine openvino: %w", err)
		}
		return engine, "", nil
	case "auto":
		engine, why, err := startAuto(cfg, log)
		if err != nil || engine != nil {
			return engine, "", err
		}
		// The simulated engine serves until a pull brings a model.
		return newSwitchingEngine(cfg, log, simulated(), why, startAuto), why, nil
	}
	return nil, "", fmt.Errorf("engine %q is not available in this build", cfg.Engine)
}

// startAuto starts the OpenVINO engine for --engine auto: nil and why
// when it cannot serve yet (no library, no model), an error when it
// failed.
func startAuto(cfg Config, log *slog.Logger) (npu.Engine, string, error) {
	if isolated(cfg, "openvino") {
		// No native code in the daemon: the library is only found here
		// (the workers load it), the models folder is read in Go.
		path, libErr := findLibrary(cfg)
		models, _ := modelsIn(cfg.ModelsDir)
		var why []string
		if libErr != nil {
			why = append(why, libErr.Error())
		}
		if len(models) == 0 {
			why = append(why, fmt.Sprintf("the models folder %s holds no model (npud pull OpenVINO/Qwen2.5-1.5B-Instruct-int4-ov)", cfg.ModelsDir))
		}
		if len(why) > 0 {
			return nil, strings.Join(why, "; "), nil
		}
		cfg.OpenVINOLib = path
		engine, err := newWorkerEngine(cfg, "openvino", log)
		if err != nil {
			return nil, err.Error(), nil //nolint:nilerr // under --engine auto this failure is why the simulated engine serves, not an error
		}
		return engine, "", nil
	}
	engine, why, err := autoEngine(cfg, log)
	if err != nil {
		return nil, "", fmt.Errorf("--engine auto: %w", err)
	}
	return engine, why, nil
}

// isolatedEngine is an engine running in worker processes.
type isolatedEngine interface {
	Restarts() int64
	DeviceHealth() map[string]bool
	SetObserver(worker.Observer)
}

// modelsIn lists the models in an OpenVINO models folder (none when it
// does not exist yet).
func modelsIn(dir string) ([]npu.ModelInfo, error) {
	return modelstore.New(dir, nil).Scan(0)
}

// simulatedWhy is why the simulated engine serves, when it does.
func (s *Server) simulatedWhy() string {
	if sw, ok := s.router.Engine().(*switchingEngine); ok {
		return sw.Why()
	}
	return s.simReason
}

// engineChange is what changed when --engine auto started the OpenVINO
// engine without a restart; nil when nothing did.
func (s *Server) engineChange() *EngineChange {
	if sw, ok := s.router.Engine().(*switchingEngine); ok {
		return sw.Change()
	}
	return nil
}

// isolation is the engine's worker processes, when it runs in them.
func isolation(engine npu.Engine) (isolatedEngine, bool) {
	if sw, ok := engine.(*switchingEngine); ok {
		return sw.isolation()
	}
	w, ok := engine.(isolatedEngine)
	return w, ok
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

func (s *Server) routes() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// requestInfo is outermost so that a request whose handler panicked
	// still gets its access-log line, with the 500 recoverPanics wrote.
	// Then the checks, cheapest and least trusting first: the Host header
	// (DNS rebinding), the browser origin, the key, the tenant's budget.
	r.Use(s.requestInfo, s.recoverPanics, s.limitBody, s.checkHost, s.cors, s.authenticate, s.limitTenant)
	r.NoRoute(func(c *gin.Context) {
		writeRouteError(c, http.StatusNotFound, fmt.Sprintf("no route for %s %s", c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		writeRouteError(c, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
	})
	r.GET("/health", s.health)
	r.HEAD("/health", s.health) // health checkers often send HEAD
	r.GET("/metrics", s.metrics.handler())
	r.POST("/admin/reload", s.adminReload)
	r.GET(StatusPath, s.status)
	ui := gin.WrapH(console.Handler())
	r.GET(console.Path+"*file", ui)
	r.HEAD(console.Path+"*file", ui)
	r.GET(strings.TrimSuffix(console.Path, "/"), func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, console.Path) })
	images := s.imageLimits()
	s.metrics.watchImageMemory(images.Budget)
	s.wsConns = wsconn.New(wsconn.Config{
		MaxMessage:     func() int64 { return s.policy.Load().maxBody },
		KeyValid:       func(id string) bool { return id == "" || s.policy.Load().keys.hasID(id) },
		PingInterval:   s.cfg.Heartbeat,
		WriteTimeout:   s.cfg.TokenTimeout,
		AllowAnyOrigin: true, // s.cors vetted the Origin already
		Admit:          s.admitRealtime,
		RequestEnded: func(route string, info *reqinfo.Info) {
			s.metrics.requestEnded(route, http.StatusOK, info, s.servesModel)
		},
		StreamOpened: s.metrics.streamOpened,
	})
	s.openai = openaiapi.New(s.router, openaiapi.Config{
		Images:          images,
		Audio:           s.audioLimits(),
		AudioDecoder:    s.audioDecoder,
		MaxAudioDecodes: s.cfg.MaxAudioDecodes,
		DefaultTimeout:  s.cfg.RequestTimeout,
		WriteTimeout:    s.cfg.TokenTimeout,
		MaxEmbedInputs:  s.cfg.MaxEmbedInputs,
		Journal: journal.Config{
			Window:    s.cfg.ResumeWindow,
			MaxBytes:  s.cfg.ResumeMaxBytes,
			Heartbeat: s.cfg.Heartbeat,
		},
		Responses: openaiapi.StoreConfig{MaxResponses: s.cfg.ResponsesMax, MaxBytes: s.cfg.ResponsesMaxBytes, MaxAge: s.cfg.ResponsesMaxAge,
			MaxPerTenant: s.cfg.ResponsesMaxPerTenant, MaxBytesPerTenant: s.cfg.ResponsesMaxBytesPerTenant},
		WebSockets:    s.wsConns,
		MaxWSMessages: s.cfg.WSMaxMessages,
	}, s.log)
	s.openai.Register(r)
	s.ws = wsapi.New(s.router, s.openai.Journals(), wsapi.Config{
		Conns:          s.wsConns,
		Images:         images,
		MaxRequests:    s.cfg.WSMaxRequests,
		DefaultTimeout: s.cfg.RequestTimeout,
	}, s.log)
	s.ws.Register(r)
	s.ollama = ollamaapi.New(s.router, ollamaapi.Config{
		Images:         images,
		DefaultTimeout: s.cfg.RequestTimeout,
		WriteTimeout:   s.cfg.TokenTimeout,
		Version:        Version,
		MaxEmbedInputs: s.cfg.MaxEmbedInputs,
	}, s.log)
	s.ollama.Register(r)
	s.anthropic = anthropicapi.New(s.router, anthropicapi.Config{
		Images:         images,
		DefaultTimeout: s.cfg.RequestTimeout,
		WriteTimeout:   s.cfg.TokenTimeout,
	}, s.log)
	s.anthropic.Register(r)
	// The guards and the accounting follow what each API declares.
	s.routeTable = route.NewTable(s.openai.Routes(), s.ollama.Routes(), s.ws.Routes(), s.anthropic.Routes())
	return r
}

// Serve serves until ctx ends, then drains: it stops accepting, lets
// in-flight streams finish within the drain timeout, ends the rest with an
// error event, and waits for the engine. It returns nil after a clean drain.
func (s *Server) Serve(ctx context.Context) error {
	// Preloading comes first: a model that fails to load must stop the
	// start before npud says it listens, and before READY.
	if err := s.preload(ctx); err != nil {
		_ = s.ln.Close()
		return err
	}
	engine := s.router.Engine()
	// One line with what a person checks first; every setting at debug.
	auth := "off"
	if n := len(s.policy.Load().keys.keys); n > 0 {
		auth = fmt.Sprintf("on (%d keys)", n)
	}
	models := s.router.Models()
	names := make([]string, 0, min(len(models), 8))
	for _, m := range models[:min(len(models), 8)] {
		names = append(names, m.ID)
	}
	if len(models) > 8 {
		names = append(names, fmt.Sprintf("… %d more", len(models)-8))
	}
	s.log.Info("npud listening", "addr", s.Addr().String(), "engine", engine.Name(), "simulated", engine.Simulated(),
		"devices", deviceList(engine), "models", names, "preloaded", s.cfg.Preload, "auth", auth, "tls", s.cfg.TLSCert != "")
	s.log.Debug("configuration", "config", s.cfg)
	if engine.Simulated() {
		s.log.Warn("the simulated engine makes up its text: no model runs", "engine", engine.Name(), "why", s.simulatedWhy())
	}
	if !loopbackAddr(s.Addr().String()) && !s.policy.Load().keys.enabled() {
		s.log.Warn("listening beyond loopback with no API key: anyone who can reach this address may use every route, "+
			"/admin and model deletion included (set api-key or api-key-file, or listen on 127.0.0.1)", "addr", s.Addr().String())
	}
	served := make(chan error, 1)
	go func() {
		if s.cfg.TLSCert != "" {
			served <- s.http.ServeTLS(s.ln, s.cfg.TLSCert, s.cfg.TLSKey)
			return
		}
		served <- s.http.Serve(s.ln)
	}()
	notify := notifier{s.log}
	notify.send("READY=1\nSTATUS=serving on " + s.Addr().String())
	watchCtx, stopWatchdog := context.WithCancel(ctx)
	defer stopWatchdog()
	go notify.watchdog(watchCtx)
	select {
	case err := <-served:
		return fmt.Errorf("serving http: %w", err)
	case <-ctx.Done():
	}
	stopWatchdog()
	notify.send("STOPPING=1\nSTATUS=draining")
	err := s.drain(context.WithoutCancel(ctx)) // ctx has ended: the drain has its own timeout
	if serveErr := <-served; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serving http: %w", serveErr))
	} // http.Serve has returned, so the listener is closed
	return err
}

// preload loads the configured models before serving, kept loaded until
// unloaded explicitly, so the first request does not pay for the (slow, on
// an NPU) compile.
func (s *Server) preload(ctx context.Context) error {
	notify := notifier{s.log}
	for _, model := range s.cfg.Preload {
		// An NPU compile can outlast the unit's start timeout: tell
		// systemd what is happening, and ask for more time while it does.
		status := "preloading " + model
		compile := s.router.CompileState(model)
		if compile != npu.CompileUnknown { // "compiling for NPU (first time)": minutes
			status += ": " + npu.LoadStatus{Model: model, Compile: compile, Device: namedDevice(s.cfg.Device)}.Text()
		}
		notify.send("STATUS=" + status)
		s.log.Info("preloading", "model", model, "status", status)
		stop := notify.extendWhile(ctx, preloadExtension)
		took, err := s.router.Preload(ctx, model)
		stop()
		if err != nil {
			return fmt.Errorf("preloading model %q: %w", model, err)
		}
		s.log.Info("model preloaded", "model", model, "load", took, "first_compile", compile == npu.CompileFirst)
	}
	return nil
}

// drain stops taking work, lets what runs finish within --drain-timeout,
// ends the rest with an error, and waits for every engine call and handler.
// Its steps set their own deadlines under ctx, which must not have ended.
func (s *Server) drain(ctx context.Context) error {
	close(s.draining)
	s.router.StopAccepting()
	s.log.Info("draining", "timeout", s.cfg.DrainTimeout, "running", s.router.Running(), "queued", s.router.Waiting())
	drainCtx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	defer cancel()
	if s.cfg.DrainDelay > 0 {
		// /health answers 503 and new requests shutting_down while the
		// listener stays open: a load balancer's health check sees the
		// drain, and its retry sends new requests to another box.
		select {
		case <-time.After(min(s.cfg.DrainDelay, s.cfg.DrainTimeout)):
		case <-drainCtx.Done():
		}
	}
	err := s.http.Shutdown(drainCtx)
	// Shutdown does not wait for hijacked (WebSocket) connections.
	s.wsConns.Shutdown(drainCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Streams still open get an error event (not a silent close) and
		// the engine gets Cancel at its next callback.
		s.log.Warn("drain timeout passed; ending open streams", "running", s.router.Running(), "queued", s.router.Waiting())
		s.router.Abort()
		graceCtx, cancelGrace := context.WithTimeout(ctx, 5*time.Second) // drainCtx has expired
		defer cancelGrace()
		if err = s.http.Shutdown(graceCtx); err != nil {
			s.cancelHandlers()
			err = s.http.Close()
		}
	}
	s.cancelHandlers()
	if err != nil {
		return fmt.Errorf("shutting down http: %w", err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, 10*time.Second)
	defer cancelWait()
	if err := s.router.Wait(waitCtx); err != nil {
		return err
	}
	requestsDone := make(chan struct{})
	go func() { s.requests.Wait(); close(requestsDone) }()
	select {
	case <-requestsDone:
	case <-waitCtx.Done():
		return fmt.Errorf("waiting for requests to end: %w", waitCtx.Err())
	}
	// Journal pumps end with their streams, which every engine call ending
	// has ended.
	for _, api := range []interface{ Shutdown(context.Context) error }{s.openai, s.ollama} {
		if err := api.Shutdown(waitCtx); err != nil {
			return err
		}
	}
	s.router.Engine().Close() // every generate has returned: free the native pipelines
	closeUpstreams(s.router)
	s.log.Info("stopped")
	return nil
}

// deviceList names the devices the engine can use, for the start-up line.
func deviceList(engine npu.Engine) []string {
	if engine.Simulated() {
		return []string{"simulated"}
	}
	names := make([]string, 0, 4)
	for name := range engine.DeviceNames() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// audioLimits bounds audio uploads: their size and length, and one memory
// budget for decoded audio, its own apart from the images': a clip is
// 64 KB a second of audio held until its transcription ends, a picture
// megabytes held until its generation ends, so each is sized for what it
// serves (a box with no speech model gives audio nothing to hold anyway).
func (s *Server) audioLimits() audioin.Limits {
	budget := membudget.New(s.cfg.MaxAudioMemory)
	budget.ReturnMemory = debug.FreeOSMemory // after a long decode, give the decoder's buffers back
	return audioin.Limits{MaxBytes: s.cfg.MaxAudioBytes, MaxDuration: s.cfg.MaxAudioDuration, Memory: budget}
}

// imageLimits bounds client images: one memory budget for decoded images
// shared by every API, and the fetch client that reaches public addresses
// only (and the operator's --image-url-allow ranges).
func (s *Server) imageLimits() imagein.Limits {
	budget := imagein.NewBudget(s.cfg.MaxImageMemory)
	budget.ReturnMemory = debug.FreeOSMemory // after a large decode, give the decoder's buffers back
	var allow []netip.Prefix
	for _, c := range s.cfg.ImageURLAllow {
		if p, err := netip.ParsePrefix(c); err == nil { // checked by the configuration
			allow = append(allow, p.Masked())
		}
	}
	return imagein.Limits{MaxImages: s.cfg.MaxImages, MaxBytes: s.cfg.MaxImageBytes, MaxPixels: s.cfg.MaxImagePixels,
		MaxDecodedBytes: s.cfg.MaxRequestImageMemory, Budget: budget,
		AllowURLs: s.cfg.AllowImageURLs, Client: imagein.NewFetchClient(allow)}
}
