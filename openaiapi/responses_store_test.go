package openaiapi

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func storedWith(id, text string) storedResponse {
	return storedResponse{obj: responseObject{ID: id, Output: []outputItem{{Type: "message", Content: []contentPart{newOutputTextPart(text)}}}}}
}

func TestResponseStoreBounds(t *testing.T) {
	one := entrySize(storedWith("resp_0", "x"))
	for _, tc := range []struct {
		name    string
		cfg     StoreConfig
		puts    int
		advance time.Duration
		want    []string // ids still there, of resp_0 … resp_{puts-1}
	}{
		{"count: oldest evicted first", StoreConfig{MaxResponses: 2, MaxBytes: 1 << 20}, 4, 0, []string{"resp_2", "resp_3"}},
		{"bytes: oldest evicted first", StoreConfig{MaxResponses: 100, MaxBytes: 3 * one}, 5, 0, []string{"resp_2", "resp_3", "resp_4"}},
		{"age: all expired", StoreConfig{MaxResponses: 100, MaxBytes: 1 << 20, MaxAge: time.Minute}, 3, time.Minute, nil},
		{"age: within", StoreConfig{MaxResponses: 100, MaxBytes: 1 << 20, MaxAge: time.Minute}, 2, time.Minute - time.Second, []string{"resp_0", "resp_1"}},
		{"zero count stores nothing", StoreConfig{MaxResponses: 0, MaxBytes: 1 << 20}, 2, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
			tc.cfg.Now = clock.now
			s := newResponseStore(tc.cfg)
			for i := range tc.puts {
				s.put("alice", storedWith("resp_"+strconv.Itoa(i), "x"))
			}
			clock.t = clock.t.Add(tc.advance)
			var got []string
			for i := range tc.puts {
				if _, ok := s.get("alice", "resp_"+strconv.Itoa(i)); ok {
					got = append(got, "resp_"+strconv.Itoa(i))
				}
			}
			assert.Equal(t, tc.want, got)
			assertCounts(t, s)
		})
	}
}

func TestResponseStoreIsPerTenant(t *testing.T) {
	s := newResponseStore(StoreConfig{MaxResponses: 10, MaxBytes: 1 << 20})
	s.put("alice", storedWith("resp_a", "hers"))
	_, ok := s.get("bob", "resp_a")
	assert.False(t, ok, "bob cannot read alice's response")
	assert.False(t, s.delete("bob", "resp_a"), "nor delete it")
	_, ok = s.get("alice", "resp_a")
	assert.True(t, ok)
}

func TestResponseStoreRefusesOneLargerThanItAll(t *testing.T) {
	small := storedWith("resp_small", "x")
	s := newResponseStore(StoreConfig{MaxResponses: 10, MaxBytes: 2 * entrySize(small)})
	s.put("alice", small)
	s.put("alice", storedWith("resp_big", strings.Repeat("x", int(3*entrySize(small)))))
	_, big := s.get("alice", "resp_big")
	_, kept := s.get("alice", "resp_small")
	assert.False(t, big, "too large to keep")
	assert.True(t, kept, "and it evicted nothing")
}

// assertCounts checks the store's counts against its entries.
func assertCounts(t *testing.T, s *responseStore) {
	t.Helper()
	var sum int64
	count := 0
	for _, tr := range s.tenants {
		var own int64
		for el := tr.order.Front(); el != nil; el = el.Next() {
			own += el.Value.(*storeEntry).size
			count++
		}
		assert.Equal(t, own, tr.bytes, "a tenant's byte count follows evictions")
		sum += own
	}
	assert.Equal(t, sum, s.bytes, "the byte count follows evictions")
	assert.Equal(t, count, s.count)
	assert.Len(t, s.byKey, count)
}

// Issue 38 item 2: one tenant storing many responses evicted another's,
// whose previous_response_id chains then failed. A tenant past its share
// evicts its own oldest; with the total full of other tenants' responses,
// a tenant's new one is not stored, and nothing of theirs goes.
func TestResponseStoreTenantsDoNotEvictEachOther(t *testing.T) {
	one := entrySize(storedWith("resp_b0", "x"))
	for _, tc := range []struct {
		name     string
		cfg      StoreConfig
		wantBobs []string // of bob's resp_b0, resp_b1 after alice's 10
		alice    []string // alice's kept, of resp_a0 … resp_a9
	}{
		{"count share", StoreConfig{MaxResponses: 6, MaxBytes: 1 << 20, MaxPerTenant: 3},
			[]string{"resp_b0", "resp_b1"}, []string{"resp_a7", "resp_a8", "resp_a9"}},
		{"bytes share", StoreConfig{MaxResponses: 100, MaxBytes: 1 << 20, MaxBytesPerTenant: 2 * one},
			[]string{"resp_b0", "resp_b1"}, []string{"resp_a8", "resp_a9"}},
		{"total full of alice's: bob's stay, alice evicts her own", StoreConfig{MaxResponses: 4, MaxBytes: 1 << 20},
			[]string{"resp_b0", "resp_b1"}, []string{"resp_a8", "resp_a9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newResponseStore(tc.cfg)
			for i := range 2 {
				assert.True(t, s.put("bob", storedWith("resp_b"+strconv.Itoa(i), "x")))
			}
			for i := range 10 {
				s.put("alice", storedWith("resp_a"+strconv.Itoa(i), "x"))
			}
			var bobs, alices []string
			for i := range 10 {
				if _, ok := s.get("bob", "resp_b"+strconv.Itoa(i)); ok {
					bobs = append(bobs, "resp_b"+strconv.Itoa(i))
				}
				if _, ok := s.get("alice", "resp_a"+strconv.Itoa(i)); ok {
					alices = append(alices, "resp_a"+strconv.Itoa(i))
				}
			}
			assert.Equal(t, tc.wantBobs, bobs, "alice's responses evict none of bob's")
			assert.Equal(t, tc.alice, alices)
			assertCounts(t, s)
		})
	}

	// A total full of others' responses: the newcomer's is not stored.
	s := newResponseStore(StoreConfig{MaxResponses: 2, MaxBytes: 1 << 20})
	assert.True(t, s.put("bob", storedWith("resp_b0", "x")))
	assert.True(t, s.put("bob", storedWith("resp_b1", "x")))
	assert.False(t, s.put("carol", storedWith("resp_c0", "x")), "no room that is carol's")
	_, kept := s.get("bob", "resp_b0")
	assert.True(t, kept)
	assertCounts(t, s)
}
