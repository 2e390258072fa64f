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
	MaxResponses int           // 0: nothing is stored
	MaxBytes     int64         // the sum of their encoded sizes
	MaxAge       time.Duration // 0: no age limit
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

// responseStore holds responses per tenant: a key names only its own
// tenant's responses. The oldest go first when a bound is passed.
type responseStore struct {
	cfg   StoreConfig
	mu    sync.Mutex
	order *list.List // *storeEntry, oldest at the front
	byKey map[storeKey]*list.Element
	bytes int64
}

func newResponseStore(cfg StoreConfig) *responseStore {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &responseStore{cfg: cfg, order: list.New(), byKey: map[storeKey]*list.Element{}}
}

func entrySize(r storedResponse) int64 {
	obj, _ := json.Marshal(r.obj)
	conv, _ := json.Marshal(r.conversation)
	n := int64(len(obj) + len(conv))
	for _, it := range r.input {
		n += int64(len(it))
	}
	return n
}

// put stores r, evicting the oldest responses past the bounds; a response
// larger than the whole store is not kept.
func (s *responseStore) put(tenant string, r storedResponse) {
	if s.cfg.MaxResponses <= 0 {
		return
	}
	size := entrySize(r)
	if s.cfg.MaxBytes > 0 && size > s.cfg.MaxBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := storeKey{tenant, r.obj.ID}
	if el, ok := s.byKey[key]; ok {
		s.remove(el)
	}
	s.byKey[key] = s.order.PushBack(&storeEntry{key: key, resp: r, size: size, at: s.cfg.Now()})
	s.bytes += size
	for s.order.Len() > s.cfg.MaxResponses || (s.cfg.MaxBytes > 0 && s.bytes > s.cfg.MaxBytes) {
		s.remove(s.order.Front())
	}
}

func (s *responseStore) remove(el *list.Element) {
	e := s.order.Remove(el).(*storeEntry)
	delete(s.byKey, e.key)
	s.bytes -= e.size
}

// expire drops what is older than the age bound (under mu).
func (s *responseStore) expire() {
	if s.cfg.MaxAge <= 0 {
		return
	}
	cutoff := s.cfg.Now().Add(-s.cfg.MaxAge)
	for el := s.order.Front(); el != nil && !el.Value.(*storeEntry).at.After(cutoff); el = s.order.Front() {
		s.remove(el)
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
