package wsapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/npud/npud/wire/reqinfo"
)

// connBase is what every WebSocket connection of the API has, whatever
// its protocol: the connection, its settings, the writers it waits for,
// and whether it takes new work.
type connBase struct {
	a    *API
	conn *websocket.Conn
	cfg  Config
	wg   sync.WaitGroup // the connection's running writers

	draining atomic.Bool // no new work
}

// connHandler is one protocol's side of a connection.
type connHandler interface {
	// readLoop handles the client's messages until the connection ends.
	readLoop(ctx context.Context) error
	// abort ends the connection's work now (the drain timeout passed):
	// each writer sends its in-band error and returns.
	abort()
	// revoke ends the connection because its API key was revoked: no new
	// work, its work stops, and the close handshake says why (1008).
	revoke()
	base() *connBase
}

func (b *connBase) base() *connBase { return b }

// serve is the life of one connection, the same for every protocol:
// accepted, tracked for the drain and for key revocation, pinged, and
// closed with a handshake (1001 on a drain, never a bare TCP close).
func (a *API) serve(c *gin.Context, accept *websocket.AcceptOptions, newHandler func(*connBase) connHandler) {
	cfg := a.cfg
	if accept == nil {
		accept = &websocket.AcceptOptions{}
	}
	accept.InsecureSkipVerify = cfg.AllowAnyOrigin
	conn, err := websocket.Accept(c.Writer, c.Request, accept)
	if err != nil {
		reqinfo.From(c.Request.Context()).Fail(err) // Accept answered the client already
		return
	}
	a.realtimeConns.Add(1)
	defer a.realtimeConns.Done()
	conn.SetReadLimit(cfg.MaxMessage())
	b := &connBase{a: a, conn: conn, cfg: cfg}
	h := newHandler(b)
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	keyID := reqinfo.From(ctx).KeyID
	defer a.trackConn(h, keyID)()
	if cfg.KeyValid != nil && !cfg.KeyValid(keyID) {
		h.revoke() // revoked between authentication and tracking: CloseKeys missed it
	}
	// Past the drain timeout the work still running ends with an in-band
	// shutting_down error, then the close handshake (1001) below: never a
	// bare TCP close.
	stop := context.AfterFunc(a.closeAll, h.abort)
	defer stop()
	goingAway := make(chan struct{})
	go func() {
		// On drain: let this connection's work finish, then close.
		select {
		case <-a.draining:
		case <-ctx.Done():
			return
		}
		b.draining.Store(true)
		b.wg.Wait()
		close(goingAway)
		// A close handshake, not a cancelled read (which would drop the
		// TCP connection without one); readLoop then returns.
		_ = conn.Close(websocket.StatusGoingAway, "npud is shutting down")
	}()
	if cfg.PingInterval > 0 {
		go b.ping(ctx, cancel)
	}
	err = h.readLoop(ctx)
	cancel()
	b.wg.Wait() // every writer has returned
	status := websocket.CloseStatus(err)
	select {
	case <-goingAway:
		return // closed with 1001 already
	default:
	}
	switch {
	case status == websocket.StatusNormalClosure || status == websocket.StatusGoingAway:
		_ = conn.Close(websocket.StatusNormalClosure, "")
	case status == websocket.StatusMessageTooBig:
		// coder/websocket closed it with 1009 already.
	default:
		_ = conn.Close(websocket.StatusInternalError, "connection ended")
	}
}

// ping keeps the connection alive through proxies and notices a peer that
// vanished without closing.
func (b *connBase) ping(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(b.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, done := context.WithTimeout(ctx, b.cfg.PingInterval)
			err := b.conn.Ping(pctx)
			done()
			if err != nil {
				cancel()
				return
			}
		}
	}
}

// write sends one text message; a client that does not read within the
// write timeout loses its connection (its work then stops).
func (b *connBase) write(ctx context.Context, msg []byte) error {
	if d := b.cfg.WriteTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return b.conn.Write(ctx, websocket.MessageText, msg)
}
