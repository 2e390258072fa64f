package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/npud/npud/npu"
)

// CrashConfig says what the engine remembers of the requests that crashed
// (or hung) a worker, so that one tenant's poison request cannot degrade
// everyone's service.
type CrashConfig struct {
	// Window is how long a crash is remembered; 0 = 10 minutes.
	Window time.Duration
	// TenantCrashes: a tenant whose requests crashed workers this many
	// times within Window is refused (npu.ErrCrashThrottled) until the
	// oldest of them ages out; 0 = 2. Requests without a tenant, or of
	// Anonymous (a server without keys: one user), are never throttled.
	TenantCrashes int
	Anonymous     string
	// MaxRemembered bounds the requests and the tenants remembered; the
	// one whose last crash is oldest is forgotten first. 0 = 4096.
	MaxRemembered int
}

// crashMemory remembers recent crashes by request fingerprint and by
// tenant. Both maps are bounded by MaxRemembered and by Window.
type crashMemory struct {
	cfg CrashConfig
	now func() time.Time

	mu       sync.Mutex
	requests map[string][]time.Time // fingerprint → its crashes within the window
	tenants  map[string][]time.Time // tenant → its requests' crashes within the window
}

func newCrashMemory(cfg CrashConfig, now func() time.Time) *crashMemory {
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Minute
	}
	if cfg.TenantCrashes <= 0 {
		cfg.TenantCrashes = 2
	}
	if cfg.MaxRemembered <= 0 {
		cfg.MaxRemembered = 4096
	}
	return &crashMemory{cfg: cfg, now: now, requests: map[string][]time.Time{}, tenants: map[string][]time.Time{}}
}

// fingerprint names what a request asks of the engine: the same body sent
// again (an SDK's retry) has the same one, whoever sends it and whatever
// its keep-alive or deadline.
func fingerprint(req *npu.Request) string {
	r := *req
	r.Tenant, r.KeepAlive, r.MayUnpin, r.Timeout = "", nil, false, 0
	b, _ := json.Marshal(&r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// recent drops the times older than the window.
func (m *crashMemory) recent(times []time.Time, now time.Time) []time.Time {
	return slices.DeleteFunc(times, func(t time.Time) bool { return now.Sub(t) >= m.cfg.Window })
}

// check refuses a request that crashed a worker twice within the window,
// and the requests of a tenant whose requests keep crashing workers.
func (m *crashMemory) check(fp, tenant string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if crashes := m.recent(m.requests[fp], now); len(crashes) >= 2 {
		m.requests[fp] = crashes
		return fmt.Errorf("this request crashed the engine's worker %d times within %s; it is refused until %s: %w",
			len(crashes), m.cfg.Window, crashes[len(crashes)-1].Add(m.cfg.Window).Format(time.RFC3339), npu.ErrEngineCrashedOnRequest)
	}
	if !m.throttles(tenant) {
		return nil
	}
	crashes := m.recent(m.tenants[tenant], now)
	m.tenants[tenant] = crashes
	if len(crashes) == 0 {
		delete(m.tenants, tenant)
	}
	if len(crashes) >= m.cfg.TenantCrashes {
		return fmt.Errorf("tenant %q: its requests crashed the engine's worker %d times within %s; it is served again at %s: %w",
			tenant, len(crashes), m.cfg.Window, crashes[len(crashes)-m.cfg.TenantCrashes].Add(m.cfg.Window).Format(time.RFC3339), npu.ErrCrashThrottled)
	}
	return nil
}

// crashed records that the request fp of tenant crashed a worker; repeat
// reports that it had crashed one before, within the window.
func (m *crashMemory) crashed(fp, tenant string) (repeat bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	crashes := m.recent(m.requests[fp], now)
	repeat = len(crashes) > 0
	remember(m.requests, fp, append(crashes, now), m.cfg.MaxRemembered)
	if m.throttles(tenant) {
		remember(m.tenants, tenant, append(m.recent(m.tenants[tenant], now), now), m.cfg.MaxRemembered)
	}
	return repeat
}

// throttles reports whether tenant's crashes are counted: a key's, not
// the one user's of a server without keys.
func (m *crashMemory) throttles(tenant string) bool {
	return tenant != "" && tenant != m.cfg.Anonymous
}

// remember sets key's crashes, first forgetting the key whose last crash
// is oldest when the map is full.
func remember(m map[string][]time.Time, key string, times []time.Time, limit int) {
	if _, ok := m[key]; !ok && len(m) >= limit {
		var oldest string
		var at time.Time
		for k, ts := range m {
			if last := lastOf(ts); oldest == "" || last.Before(at) {
				oldest, at = k, last
			}
		}
		delete(m, oldest)
	}
	m[key] = times
}

func lastOf(ts []time.Time) time.Time {
	if len(ts) == 0 {
		return time.Time{}
	}
	return ts[len(ts)-1]
}

// size is how many requests and tenants are remembered (for tests).
func (m *crashMemory) size() (requests, tenants int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests), len(m.tenants)
}
