// Package wsconn is the life of a WebSocket connection, the same for every
// WebSocket npud serves (its own streams protocol in wsapi, the Responses
// API's WebSocket mode in openaiapi): accepted, tracked for the drain and
// for API key revocation, pinged, written with a deadline, and closed with
// a handshake, never a bare TCP close. One Hub holds every connection, so
// the daemon drains and revokes them in one place, whichever API opened
// them; each protocol supplies only what is said on its connections (a
// Handler). It sits in wire because two APIs share it and no API imports
// another.
package wsconn

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/npud/npud/wire/reqinfo"
)

// Refusal is why a message's work is not admitted (a tenant over its rate).
type Refusal struct {
	Code    string
	Message string
}

// Config is what every WebSocket connection shares: its bounds, and the
// daemon's admission and accounting for the work a message starts (the
// upgrade was one HTTP request; each generation it starts counts too).
type Config struct {
	MaxMessage func() int64 // largest client message, read per connection (a reload may change it)
	// KeyValid reports whether the key a connection authenticated with
	// (its id; "" without keys) is still configured: a connection whose
	// key a reload revoked while it was being accepted is closed too.
	KeyValid       func(keyID string) bool
	PingInterval   time.Duration // WebSocket pings that keep proxies from idling the connection out; 0 = none
	WriteTimeout   time.Duration // a client that reads nothing for that long loses its connection; 0 = none
	AllowAnyOrigin bool          // the daemon's CORS check already vetted Origin
	// Admit, when set, takes one request from the tenant's rate budget for
	// each message that starts work, or says why not.
	Admit func(tenant string) *Refusal
	// RequestEnded, when set, reports a piece of work of a connection on
	// route (its path) for the metrics, as an HTTP request's end is.
	RequestEnded func(route string, info *reqinfo.Info)
	// StreamOpened, when set, counts a generation as an active stream of
	// route until done is called (npud_active_streams, as for HTTP).
	StreamOpened func(route string) (done func())
}

// Handler is one protocol's side of a connection.
type Handler interface {
	// ReadLoop handles the client's messages until the connection ends.
	ReadLoop(ctx context.Context) error
	// Abort ends the connection's work now (the drain timeout passed):
	// each writer sends its in-band error and returns.
	Abort()
	// Revoke ends the connection because its API key was revoked: no new
	// work, its work stops, and the close handshake says why (1008).
	Revoke()
}

// Hub holds the open connections. They outlive http.Server.Shutdown
// (they are hijacked), so the hub tracks them for the drain.
type Hub struct {
	cfg Config

	conns       sync.WaitGroup
	mu          sync.Mutex
	open        map[Handler]string // open connections, with the id of the key that opened each
	drainOnce   sync.Once
	draining    chan struct{} // closed when the drain begins
	closeAll    context.Context
	closeAllNow context.CancelFunc
}

// New returns a hub for connections bounded by cfg.
func New(cfg Config) *Hub {
	closeAll, closeAllNow := context.WithCancel(context.Background())
	return &Hub{cfg: cfg, draining: make(chan struct{}), closeAll: closeAll, closeAllNow: closeAllNow}
}

// Admit takes a message's work from tenant's rate budget, or says why
// not (nil: admitted).
func (h *Hub) Admit(tenant string) *Refusal {
	if h.cfg.Admit == nil {
		return nil
	}
	return h.cfg.Admit(tenant)
}

// RequestEnded reports a piece of work on route for the metrics.
func (h *Hub) RequestEnded(route string, info *reqinfo.Info) {
	if h.cfg.RequestEnded != nil {
		h.cfg.RequestEnded(route, info)
	}
}

// StreamOpened counts a generation on route as an active stream until
// the function it returns is called.
func (h *Hub) StreamOpened(route string) (done func()) {
	if h.cfg.StreamOpened == nil {
		return func() {}
	}
	return h.cfg.StreamOpened(route)
}

// Shutdown ends the connections for a drain: each finishes the work it
// runs and closes with 1001 (going away); when ctx ends first, the rest
// end with an in-band error and are closed. It returns when all are gone.
func (h *Hub) Shutdown(ctx context.Context) {
	h.drainOnce.Do(func() { close(h.draining) })
	done := make(chan struct{})
	go func() { h.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		h.closeAllNow()
		<-done
	}
}

// CloseKeys closes, with 1008 (policy violation), the connections opened
// with any of the API keys named by keyIDs: a reload revoked them.
func (h *Hub) CloseKeys(keyIDs []string) {
	revoked := map[string]bool{}
	for _, id := range keyIDs {
		revoked[id] = true
	}
	h.mu.Lock()
	var closing []Handler
	for hd, key := range h.open {
		if key != "" && revoked[key] {
			closing = append(closing, hd)
		}
	}
	h.mu.Unlock()
	for _, hd := range closing {
		hd.Revoke()
	}
}

func (h *Hub) track(hd Handler, keyID string) (untrack func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open == nil {
		h.open = map[Handler]string{}
	}
	h.open[hd] = keyID
	return func() {
		h.mu.Lock()
		delete(h.open, hd)
		h.mu.Unlock()
	}
}

// Conn is what every connection has, whatever its protocol: the
// WebSocket, the writers it waits for, and whether it takes new work.
type Conn struct {
	*websocket.Conn
	writeTimeout time.Duration
	wg           sync.WaitGroup // the connection's running writers
	draining     atomic.Bool    // no new work
}

// Go runs a writer of the connection's work; the connection closes only
// after every writer has returned.
func (c *Conn) Go(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// Wait waits for the connection's writers.
func (c *Conn) Wait() { c.wg.Wait() }

// StopTaking makes the connection take no new work.
func (c *Conn) StopTaking() { c.draining.Store(true) }

// Draining reports whether the connection takes no new work (a drain, a
// revoked key, a message limit).
func (c *Conn) Draining() bool { return c.draining.Load() }

// Send writes one text message; a client that does not read within the
// write timeout loses its connection (its work then stops).
func (c *Conn) Send(ctx context.Context, msg []byte) error {
	if d := c.writeTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return c.Write(ctx, websocket.MessageText, msg)
}

// Serve is the life of one connection, the same for every protocol:
// accepted (with accept's options, nil for none), tracked for the drain
// and for key revocation, pinged, and closed with a handshake (1001 on a
// drain, never a bare TCP close). newHandler makes the protocol's side.
func (h *Hub) Serve(c *gin.Context, accept *websocket.AcceptOptions, newHandler func(*Conn) Handler) {
	cfg := h.cfg
	if accept == nil {
		accept = &websocket.AcceptOptions{}
	}
	accept.InsecureSkipVerify = cfg.AllowAnyOrigin
	ws, err := websocket.Accept(c.Writer, c.Request, accept)
	if err != nil {
		reqinfo.From(c.Request.Context()).Fail(err) // Accept answered the client already
		return
	}
	h.conns.Add(1)
	defer h.conns.Done()
	ws.SetReadLimit(cfg.MaxMessage())
	conn := &Conn{Conn: ws, writeTimeout: cfg.WriteTimeout}
	hd := newHandler(conn)
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	keyID := reqinfo.From(ctx).KeyID
	defer h.track(hd, keyID)()
	if cfg.KeyValid != nil && !cfg.KeyValid(keyID) {
		hd.Revoke() // revoked between authentication and tracking: CloseKeys missed it
	}
	// Past the drain timeout the work still running ends with an in-band
	// shutting_down error, then the close handshake (1001) below: never a
	// bare TCP close.
	stop := context.AfterFunc(h.closeAll, hd.Abort)
	defer stop()
	goingAway := make(chan struct{})
	go func() {
		// On drain: let this connection's work finish, then close.
		select {
		case <-h.draining:
		case <-ctx.Done():
			return
		}
		conn.StopTaking()
		conn.Wait()
		close(goingAway)
		// A close handshake, not a cancelled read (which would drop the
		// TCP connection without one); ReadLoop then returns.
		_ = ws.Close(websocket.StatusGoingAway, "npud is shutting down")
	}()
	if cfg.PingInterval > 0 {
		go ping(ctx, ws, cfg.PingInterval, cancel)
	}
	err = hd.ReadLoop(ctx)
	cancel()
	conn.Wait() // every writer has returned
	status := websocket.CloseStatus(err)
	select {
	case <-goingAway:
		return // closed with 1001 already
	default:
	}
	switch {
	case status == websocket.StatusNormalClosure || status == websocket.StatusGoingAway:
		_ = ws.Close(websocket.StatusNormalClosure, "")
	case status == websocket.StatusMessageTooBig:
		// coder/websocket closed it with 1009 already.
	default:
		_ = ws.Close(websocket.StatusInternalError, "connection ended")
	}
}

// ping keeps the connection alive through proxies and notices a peer that
// vanished without closing.
func ping(ctx context.Context, ws *websocket.Conn, every time.Duration, cancel context.CancelFunc) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, done := context.WithTimeout(ctx, every)
			err := ws.Ping(pctx)
			done()
			if err != nil {
				cancel()
				return
			}
		}
	}
}
