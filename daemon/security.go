package daemon

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/daemon/console"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/serve"
	"github.com/npud/npud/openaiapi"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/wsconn"
)

// anonymous is the tenant of requests when no API keys are configured.
const anonymous = "anonymous"

// policy is the part of the configuration that requests are checked
// against. It is immutable; a reload swaps in a new one.
type policy struct {
	keys            keyring
	public          map[string]bool
	hosts           hostPolicy
	cors            corsPolicy
	maxBody         int64
	bodyReadTimeout time.Duration
	metricsPublic   bool
}

func newPolicy(cfg Config, listenAddr string) (*policy, error) {
	keys, err := cfg.Keys()
	if err != nil {
		return nil, err
	}
	p := &policy{
		keys:            newKeyring(keys),
		public:          map[string]bool{},
		hosts:           newHostPolicy(listenAddr, cfg.AllowedHosts),
		cors:            corsPolicy{origins: cfg.CORSOrigins},
		maxBody:         cfg.MaxBodyBytes,
		bodyReadTimeout: cfg.BodyReadTimeout,
		metricsPublic:   cfg.MetricsPublic,
	}
	for _, path := range cfg.PublicPaths {
		p.public[path] = true
	}
	return p, nil
}

// keyring holds API keys by digest. Comparing fixed-size digests, and
// every one of them, keeps the time a lookup takes independent of where
// and whether a presented token matches.
type keyring struct {
	keys    []storedKey
	compare func(a, b []byte) int // subtle.ConstantTimeCompare; tests count calls
}

type storedKey struct {
	APIKey
	digest [sha256.Size]byte
}

func newKeyring(keys []APIKey) keyring {
	r := keyring{compare: subtle.ConstantTimeCompare}
	for _, k := range keys {
		r.keys = append(r.keys, storedKey{APIKey: k, digest: sha256.Sum256([]byte(k.Key))})
	}
	return r
}

func (r keyring) enabled() bool { return len(r.keys) > 0 }

// lookup finds the key whose secret is token.
func (r keyring) lookup(token string) (storedKey, bool) {
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range r.keys {
		if r.compare(d[:], r.keys[i].digest[:]) == 1 {
			found = i // no early return: every key is compared
		}
	}
	if found < 0 {
		return storedKey{}, false
	}
	return r.keys[found], true
}

// id names a key without revealing it, for closing what it opened when
// a reload revokes it.
func (k storedKey) id() string { return hex.EncodeToString(k.digest[:]) }

// hasID reports whether a key with this id is configured.
func (r keyring) hasID(id string) bool {
	for _, k := range r.keys {
		if k.id() == id {
			return true
		}
	}
	return false
}

// revokedKeys lists the ids of prev's keys that next no longer holds.
func revokedKeys(prev, next keyring) []string {
	held := map[[sha256.Size]byte]bool{}
	for _, k := range next.keys {
		held[k.digest] = true
	}
	var out []string
	for _, k := range prev.keys {
		if !held[k.digest] {
			out = append(out, k.id())
		}
	}
	return out
}

// hostPolicy guards against DNS rebinding: a page on evil.example that
// resolves to 127.0.0.1 must not reach a loopback-only daemon, and its
// requests carry Host: evil.example.
type hostPolicy struct {
	enforce bool
	allowed map[string]bool
	any     bool
}

// loopbackAddr reports whether a listener's address is reachable from
// this machine only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

func newHostPolicy(listenAddr string, extra []string) hostPolicy {
	h := hostPolicy{allowed: map[string]bool{"localhost": true}}
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		host = listenAddr
	}
	ip := net.ParseIP(host)
	h.enforce = host == "localhost" || (ip != nil && ip.IsLoopback())
	if name, err := os.Hostname(); err == nil && name != "" {
		h.allowed[strings.ToLower(name)] = true
	}
	for _, e := range extra {
		if e == "*" {
			h.any = true
		}
		h.allowed[strings.ToLower(e)] = true
	}
	// A list set by the operator also binds a public listener.
	if len(extra) > 0 && !h.any {
		h.enforce = true
	}
	return h
}

func (h hostPolicy) ok(hostHeader string) bool {
	if !h.enforce || h.any || hostHeader == "" { // HTTP/1.0 clients may omit Host
		return true
	}
	host, _, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host = hostHeader
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || h.allowed[host]
	}
	return h.allowed[host] || strings.HasSuffix(host, ".localhost")
}

// corsPolicy decides which browser origins may call npud.
type corsPolicy struct{ origins []string }

func (p corsPolicy) allows(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Host == host { // same origin: a page npud serves itself
		return true
	}
	if len(p.origins) == 0 {
		h := strings.ToLower(u.Hostname())
		ip := net.ParseIP(h)
		return (u.Scheme == "http" || u.Scheme == "https") &&
			(h == "localhost" || strings.HasSuffix(h, ".localhost") || (ip != nil && ip.IsLoopback()))
	}
	for _, o := range p.origins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// checkHost rejects requests whose Host header names another site.
func (s *Server) checkHost(c *gin.Context) {
	if !s.policy.Load().hosts.ok(c.Request.Host) {
		writeDenied(c, http.StatusForbidden, "forbidden_host",
			fmt.Sprintf("Host %q is not allowed on this loopback listener (add it with --allowed-hosts)", c.Request.Host), 0)
		return
	}
	c.Next()
}

// cors answers preflights and marks allowed cross-origin responses.
// Requests from an origin that is not allowed are refused outright, since
// a browser sends simple POSTs before asking.
func (s *Server) cors(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if origin == "" {
		c.Next()
		return
	}
	h := c.Writer.Header()
	h.Add("Vary", "Origin")
	if !s.policy.Load().cors.allows(origin, c.Request.Host) {
		writeDenied(c, http.StatusForbidden, "forbidden_origin",
			fmt.Sprintf("origin %q is not allowed (add it with --cors-origins)", origin), 0)
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "X-Request-ID, Retry-After")
	if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, DELETE, OPTIONS")
		// The origin is trusted, so any header it asks for (SDKs add their
		// own, such as x-stainless-*) is allowed.
		if req := c.GetHeader("Access-Control-Request-Headers"); req != "" {
			h.Set("Access-Control-Allow-Headers", req)
		}
		h.Set("Access-Control-Max-Age", "600")
		c.AbortWithStatus(http.StatusNoContent)
		return
	}
	c.Next()
}

// authenticate checks the bearer token and names the tenant. With no keys
// configured every request is the anonymous tenant.
func (s *Server) authenticate(c *gin.Context) {
	p := s.policy.Load()
	info := reqinfo.From(c.Request.Context())
	info.Tenant = anonymous
	// /metrics names every tenant and its counts: with keys, it is an
	// admin's view unless metrics-public opens it to every key.
	admin := strings.HasPrefix(c.Request.URL.Path, "/admin/") || (c.Request.URL.Path == "/metrics" && !p.metricsPublic)
	if !p.keys.enabled() {
		info.ManagesModels = true // loopback use, as Ollama's
		c.Next()
		return
	}
	if !admin && p.isPublic(c.Request) {
		c.Next()
		return
	}
	addr, now := clientAddr(c.Request.RemoteAddr), time.Now()
	if blocked, wait := s.authFailures.blocked(addr, now); blocked {
		writeDenied(c, http.StatusTooManyRequests, "too_many_failed_authentications",
			fmt.Sprintf("too many failed authentications from this address; retry in %s", wait.Round(time.Second)), wait)
		return
	}
	token, ok := bearer(c.Request)
	if !ok && s.webSocket(c.Request) {
		// Browsers cannot set headers on a WebSocket handshake.
		token = c.Query("token")
		ok = token != ""
	}
	if !ok {
		c.Header("WWW-Authenticate", `Bearer realm="npud"`)
		writeDenied(c, http.StatusUnauthorized, "missing_api_key", "this server needs an API key: send Authorization: Bearer KEY (or x-api-key: KEY)", 0)
		return
	}
	key, ok := p.keys.lookup(token)
	if !ok {
		s.authFailures.failed(addr, now)
		c.Header("WWW-Authenticate", `Bearer realm="npud", error="invalid_token"`)
		writeDenied(c, http.StatusUnauthorized, "invalid_api_key", "the API key is not valid", 0)
		return
	}
	info.Tenant, info.ManagesModels, info.KeyID = key.Name, key.Admin, key.id()
	if admin && !key.Admin {
		writeDenied(c, http.StatusForbidden, "permission_denied", fmt.Sprintf("key %q may not call admin routes (/admin, /metrics)", key.Name), 0)
		return
	}
	if s.routeTable.ModelManagement(c.Request.URL.Path) && !key.Admin {
		// Deleting, copying (disk) and pulling (disk, network) models acts
		// for every tenant: the admin role's, as /admin is.
		writeDenied(c, http.StatusForbidden, "permission_denied",
			fmt.Sprintf("key %q may not manage models (delete, copy, pull): that needs an admin key", key.Name), 0)
		return
	}
	if !s.webSocket(c.Request) { // WebSockets close with 1008 (wsconn.Hub.CloseKeys)
		ctx, untrack := s.keyRequests.track(c.Request.Context(), info.KeyID)
		defer untrack()
		if !s.policy.Load().keys.hasID(info.KeyID) {
			untrack() // revoked between the lookup and the tracking: the reload missed it
			ctx = revokedContext(ctx)
		}
		c.Request = c.Request.WithContext(ctx)
	}
	c.Next()
}

// webSocket reports whether r opens one of the APIs' WebSockets: a GET on
// a WebSocket route (POST /v1/responses shares its path with the
// Responses API's WebSocket mode, and is an HTTP request like any other).
func (s *Server) webSocket(r *http.Request) bool {
	return r.Method == http.MethodGet && s.routeTable.WebSocket(r.URL.Path)
}

// keyRequests are the HTTP requests in flight per API key, so that a
// reload that revokes a key ends its streams (SSE and NDJSON) with an
// in-band key_revoked error, as it closes its WebSockets. The map holds
// only keys with a request in flight.
type keyRequests struct {
	mu    sync.Mutex
	byKey map[string]map[*context.CancelCauseFunc]struct{}
}

// track gives a request of key keyID a context that revoke ends.
func (k *keyRequests) track(parent context.Context, keyID string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byKey == nil {
		k.byKey = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if k.byKey[keyID] == nil {
		k.byKey[keyID] = map[*context.CancelCauseFunc]struct{}{}
	}
	k.byKey[keyID][&cancel] = struct{}{}
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			delete(k.byKey[keyID], &cancel)
			if len(k.byKey[keyID]) == 0 {
				delete(k.byKey, keyID)
			}
		})
	}
}

// revoke ends the requests of the keys: their streams get
// npu.ErrKeyRevoked, and their generations stop.
func (k *keyRequests) revoke(keyIDs []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range keyIDs {
		for cancel := range k.byKey[id] {
			(*cancel)(npu.ErrKeyRevoked)
		}
		delete(k.byKey, id)
	}
}

// revokedContext is ctx ended as a revoked key's.
func revokedContext(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	cancel(npu.ErrKeyRevoked)
	return ctx
}

func (p *policy) isPublic(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	// The console's files hold no data: the page asks for a key and sends
	// it with every call it makes.
	return p.public[r.URL.Path] || strings.HasPrefix(r.URL.Path, console.Path) || r.URL.Path+"/" == console.Path
}

// bearer returns the token of an Authorization: Bearer header, or of an
// x-api-key header (how Anthropic's clients send their key).
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(r.Header.Get("X-Api-Key"))
		return token, token != ""
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// admitRealtime takes a WebSocket start message from its tenant's request
// rate, as an HTTP request is taken by limitTenant.
func (s *Server) admitRealtime(tenant string) *wsconn.Refusal {
	if err := s.router.AdmitRequest(tenant, time.Now()); err != nil {
		return &wsconn.Refusal{Code: "rate_limit_exceeded", Message: err.Error()}
	}
	return nil
}

// limitTenant takes the request from its tenant's rate, which the router
// keeps with the rest of the admission: asked here, at the edge and before
// the body is read, for every route a tenant may call (lists and pulls
// too), so an abusive client costs a map lookup. The work a request then
// starts is admitted by the router against the stream cap.
func (s *Server) limitTenant(c *gin.Context) {
	if s.policy.Load().isPublic(c.Request) {
		c.Next()
		return
	}
	tenant := reqinfo.From(c.Request.Context()).Tenant
	var limited *serve.RateLimitError
	if err := s.router.AdmitRequest(tenant, time.Now()); errors.As(err, &limited) {
		writeDenied(c, http.StatusTooManyRequests, "rate_limit_exceeded", err.Error(), limited.Wait)
		return
	}
	c.Next()
}

// writeDenied refuses a request in the shape of the API its path belongs
// to, with Retry-After when the client may try again.
func writeDenied(c *gin.Context, status int, code, msg string, retryAfter time.Duration) {
	// A body this leaves unread is read, a bounded amount, only to be
	// thrown away, and the connection closed (limitBody).
	reqinfo.From(c.Request.Context()).Error = msg
	writeProtocolError(c, &openaiapi.Error{Type: "invalid_request_error", Code: code, Base: errclass.Base{Status: status,
		Message: msg, RetryAfter: retryAfter}})
	c.Abort()
}

// tenantLimits is what cfg lets one tenant do, for the router's admission.
func tenantLimits(cfg Config) serve.Limits {
	return serve.Limits{RatePerMinute: cfg.RateLimit, RateBurst: cfg.RateBurst, StreamCap: cfg.MaxStreams}
}
