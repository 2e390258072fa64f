package openaiapi

import (
	"container/list"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/wire/reqinfo"
)

// StoreConfig bounds the stored responses (previous_response_id, GET,
// input_items, DELETE). They live in memory: a restart forgets them.
type StoreConfig struct {
	MaxResponses int           // in total; 0: nothing is stored
	MaxBytes     int64         // the sum of their encoded sizes, in total
	MaxAge       time.Duration // 0: no age limit
	// MaxPerTenant and MaxBytesPerTenant bound each tenant's share (0:
	// the total's): a tenant past them evicts its own oldest, and no
	// tenant ever evicts another's.
	MaxPerTenant      int
	MaxBytesPerTenant int64
	// Now is the clock (time.Now when nil); tests inject their own.
	Now func() time.Time
}

// storedResponse is what a response leaves for GET and for the next
// response of its conversation.
type storedResponse struct {
	obj          responseObject
	input        []json.RawMessage
	conversation []message
}

type storeKey struct{ tenant, id string }

type storeEntry struct {
	key  storeKey
	resp storedResponse
	size int64
	at   time.Time
}

// tenantResponses are one tenant's stored responses, oldest at the front.
type tenantResponses struct {
	order *list.List // *storeEntry
	bytes int64
}

// responseStore holds responses per tenant: a key names only its own
// tenant's responses, and each tenant's share is bounded on its own.
type responseStore struct {
	cfg     StoreConfig
	mu      sync.Mutex
	tenants map[string]*tenantResponses
	byKey   map[storeKey]*list.Element
	count   int
	bytes   int64
}

func newResponseStore(cfg StoreConfig) *responseStore {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxPerTenant <= 0 || cfg.MaxPerTenant > cfg.MaxResponses {
		cfg.MaxPerTenant = cfg.MaxResponses
	}
	if cfg.MaxBytesPerTenant <= 0 || (cfg.MaxBytes > 0 && cfg.MaxBytesPerTenant > cfg.MaxBytes) {
		cfg.MaxBytesPerTenant = cfg.MaxBytes
	}
	return &responseStore{cfg: cfg, tenants: map[string]*tenantResponses{}, byKey: map[storeKey]*list.Element{}}
}

// entrySize is what an entry holds, as encoded: the response object, its
// request's input items and the conversation a continuation reads.
func entrySize(r storedResponse) int64 {
	obj, _ := json.Marshal(r.obj)
	conv, _ := json.Marshal(r.conversation)
	n := int64(len(obj) + len(conv))
	for _, it := range r.input {
		n += int64(len(it))
	}
	return n
}

// put stores r for tenant, evicting the tenant's own oldest responses past
// its share or the total. It reports false, storing nothing and evicting
// nothing, for a response larger than a tenant's share, or when the total
// is full of other tenants' responses.
func (s *responseStore) put(tenant string, r storedResponse) bool {
	if s.cfg.MaxResponses <= 0 {
		return false
	}
	size := entrySize(r)
	if s.cfg.MaxBytesPerTenant > 0 && size > s.cfg.MaxBytesPerTenant {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	key := storeKey{tenant, r.obj.ID}
	if el, ok := s.byKey[key]; ok {
		s.remove(el)
	}
	t := s.tenants[tenant]
	if t == nil {
		t = &tenantResponses{order: list.New()}
		s.tenants[tenant] = t
	}
	for t.order.Len() >= s.cfg.MaxPerTenant || t.bytes+size > s.cfg.MaxBytesPerTenant && s.cfg.MaxBytesPerTenant > 0 ||
		s.count >= s.cfg.MaxResponses || s.cfg.MaxBytes > 0 && s.bytes+size > s.cfg.MaxBytes {
		if t.order.Len() == 0 {
			delete(s.tenants, tenant)
			return false // the rest is other tenants': theirs to keep
		}
		s.remove(t.order.Front())
	}
	s.byKey[key] = t.order.PushBack(&storeEntry{key: key, resp: r, size: size, at: s.cfg.Now()})
	t.bytes += size
	s.count++
	s.bytes += size
	return true
}

func (s *responseStore) remove(el *list.Element) {
	e := el.Value.(*storeEntry)
	t := s.tenants[e.key.tenant]
	t.order.Remove(el)
	t.bytes -= e.size
	if t.order.Len() == 0 {
		delete(s.tenants, e.key.tenant)
	}
	delete(s.byKey, e.key)
	s.count--
	s.bytes -= e.size
}

// expire drops what is older than the age bound (under mu).
func (s *responseStore) expire() {
	if s.cfg.MaxAge <= 0 {
		return
	}
	cutoff := s.cfg.Now().Add(-s.cfg.MaxAge)
	for _, t := range s.tenants {
		for el := t.order.Front(); el != nil && !el.Value.(*storeEntry).at.After(cutoff); el = t.order.Front() {
			s.remove(el)
			if t.order.Len() == 0 {
				break // the tenant is gone from the map
			}
		}
	}
}

func (s *responseStore) get(tenant, id string) (storedResponse, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	el, ok := s.byKey[storeKey{tenant, id}]
	if !ok {
		return storedResponse{}, false
	}
	return el.Value.(*storeEntry).resp, true
}

func (s *responseStore) delete(tenant, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	el, ok := s.byKey[storeKey{tenant, id}]
	if ok {
		s.remove(el)
	}
	return ok
}

// getResponse serves GET /v1/responses/{id}.
func (a *API) getResponse(c *gin.Context) {
	info := reqinfo.From(c.Request.Context())
	r, ok := a.responses.get(info.Tenant, c.Param("id"))
	if !ok {
		a.fail(c.Writer, info, responseNotFound("response_id", c.Param("id")))
		return
	}
	c.JSON(http.StatusOK, r.obj)
}

// listInputItems serves GET /v1/responses/{id}/input_items: the items of
// the request that made the response, newest first unless order=asc.
// Pagination (after, limit) is not served: the whole list comes at once.
func (a *API) listInputItems(c *gin.Context) {
	info := reqinfo.From(c.Request.Context())
	r, ok := a.responses.get(info.Tenant, c.Param("id"))
	if !ok {
		a.fail(c.Writer, info, responseNotFound("response_id", c.Param("id")))
		return
	}
	order := c.DefaultQuery("order", "desc")
	if order != "asc" && order != "desc" {
		a.fail(c.Writer, info, invalid("order", "invalid_value", "'order' must be asc or desc, got %q", reqinfo.Clip(order)))
		return
	}
	items := make([]json.RawMessage, 0, len(r.input))
	for i := range r.input {
		j := i
		if order == "desc" {
			j = len(r.input) - 1 - i
		}
		items = append(items, r.input[j])
	}
	var first, last *string
	if len(items) > 0 {
		first, last = itemID(items[0]), itemID(items[len(items)-1])
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": items, "first_id": first, "last_id": last, "has_more": false})
}

// deleteResponse serves DELETE /v1/responses/{id}.
func (a *API) deleteResponse(c *gin.Context) {
	info := reqinfo.From(c.Request.Context())
	id := c.Param("id")
	if !a.responses.delete(info.Tenant, id) {
		a.fail(c.Writer, info, responseNotFound("response_id", id))
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "response.deleted", "deleted": true})
}

// cancelResponse serves POST /v1/responses/{id}/cancel. Only background
// responses can be cancelled, and npud runs none: a foreground one is
// cancelled by closing its request.
func (a *API) cancelResponse(c *gin.Context) {
	info := reqinfo.From(c.Request.Context())
	id := c.Param("id")
	if _, ok := a.responses.get(info.Tenant, id); !ok {
		a.fail(c.Writer, info, responseNotFound("response_id", id))
		return
	}
	a.fail(c.Writer, info, invalid("response_id", "invalid_value",
		"response %q is not a background response: only those can be cancelled, and npud runs responses in the foreground (close the request to stop one)", reqinfo.Clip(id)))
}

// itemID is an input item's id, when the client gave it one.
func itemID(raw json.RawMessage) *string {
	var it struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &it) != nil || it.ID == "" {
		return nil
	}
	return &it.ID
}
