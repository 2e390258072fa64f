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
			var sum int64
			for el := s.order.Front(); el != nil; el = el.Next() {
				sum += el.Value.(*storeEntry).size
			}
			assert.Equal(t, sum, s.bytes, "the byte count follows evictions")
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
