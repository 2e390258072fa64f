package daemon

import (
	"sync"
	"time"

	"github.com/npud/npud/wire/reqinfo"
)

// recentLimit is how many finished generations the status keeps for the
// console's charts.
const recentLimit = 60

// recentRequest is one finished generation as the console charts it: what
// its client saw, from the daemon's own measurements. Figures a
// generation cannot have (an inter-token gap of a one-token answer) are
// absent.
type recentRequest struct {
	At     time.Time `json:"at"`
	Model  string    `json:"model"`
	TTFTms float64   `json:"ttft_ms"`
	// ITLms is the mean gap between tokens after the first.
	ITLms           *float64 `json:"itl_ms,omitempty"`
	TokensPerSecond *float64 `json:"tokens_per_second,omitempty"`
	Tokens          int      `json:"tokens"`
}

// requestHistory is the last recentLimit generations that produced text,
// oldest first: a page opened now draws what came before it.
type requestHistory struct {
	mu   sync.Mutex
	ring []recentRequest
	next int // where the next one goes once the ring is full
}

// add records a generation that ended at end.
func (h *requestHistory) add(model string, info *reqinfo.Info, end time.Time) {
	if info.TTFT <= 0 {
		return // nothing reached the client: no point to draw
	}
	r := recentRequest{At: end.UTC(), Model: model, TTFTms: ms(info.TTFT), Tokens: info.TokensOut}
	if decode := end.Sub(info.Start) - info.TTFT; info.TokensOut > 1 && decode > 0 {
		gaps := float64(info.TokensOut - 1)
		itl, rate := ms(decode)/gaps, gaps/decode.Seconds()
		r.ITLms, r.TokensPerSecond = &itl, &rate
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ring) < recentLimit {
		h.ring = append(h.ring, r)
		return
	}
	h.ring[h.next] = r
	h.next = (h.next + 1) % recentLimit
}

// list is the history, oldest first.
func (h *requestHistory) list() []recentRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]recentRequest, 0, len(h.ring))
	out = append(out, h.ring[h.next:]...)
	return append(out, h.ring[:h.next]...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
