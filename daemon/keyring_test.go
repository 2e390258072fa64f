package daemon

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lookup must not reveal, through how long it takes, whether or where
// a token matched: it compares fixed-size digests and always compares
// every key.
func TestKeyringComparesEveryKeyInConstantTime(t *testing.T) {
	var keys []APIKey
	for i := range 5 {
		keys = append(keys, APIKey{Name: fmt.Sprintf("t%d", i), Key: fmt.Sprintf("sk-%d-secret", i)})
	}
	ring := newKeyring(keys)
	var compared [][2]int // lengths of each comparison
	ring.compare = func(a, b []byte) int {
		compared = append(compared, [2]int{len(a), len(b)})
		return subtle.ConstantTimeCompare(a, b)
	}
	tokens := []struct {
		token string
		want  string // tenant; "" = no match
	}{
		{"sk-0-secret", "t0"}, {"sk-4-secret", "t4"}, {"sk-2-secret", "t2"},
		{"sk-2-secreT", ""}, {"", ""}, {"x", ""},
		{string(make([]byte, 10000)), ""}, // a long token costs one hash, not a longer compare
	}
	for _, tc := range tokens {
		compared = nil
		k, ok := ring.lookup(tc.token)
		assert.Equal(t, tc.want != "", ok, "%.20q", tc.token)
		assert.Equal(t, tc.want, k.Name)
		assert.Len(t, compared, len(keys), "every key is compared, whether and wherever %.20q matches", tc.token)
		for _, c := range compared {
			assert.Equal(t, [2]int{32, 32}, c, "digests of equal size are compared")
		}
	}
}

func TestParseAPIKey(t *testing.T) {
	tests := []struct {
		in   string
		want APIKey
		err  string
	}{
		{"alice:sk-1-0123456789abcdef", APIKey{Name: "alice", Key: "sk-1-0123456789abcdef"}, ""},
		{" ops:sk-2-0123456789abcdef:admin ", APIKey{Name: "ops", Key: "sk-2-0123456789abcdef", Admin: true}, ""},
		{"alice:short-key", APIKey{}, "at least 16"}, // issue 12, item 5
		{"alice", APIKey{}, "NAME:KEY"},
		{":sk", APIKey{}, "NAME:KEY"},
		{"alice:", APIKey{}, "NAME:KEY"},
		{"a:b0123456789abcdef:root", APIKey{}, "only role is admin"},
		{"a:b:admin:x", APIKey{}, "NAME:KEY"},
		{`bad name:k0123456789abcdef`, APIKey{}, "metric label"},
	}
	for _, tc := range tests {
		got, err := ParseAPIKey(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}

// Issue 12, item 5: a key that does not parse is never printed, neither in
// the error nor in the usage the flag package writes.
func TestAPIKeyErrorsMaskTheKey(t *testing.T) {
	for _, args := range [][]string{
		{"--api-key", "alice:sk-very-secret-value-1:root"},
		{"--api-key=alice:sk-short"},
	} {
		var usage bytes.Buffer
		_, err := ParseServe(args, func(string) string { return "" }, &usage)
		require.Error(t, err)
		assert.NotContains(t, err.Error()+usage.String(), "sk-", "%v", args)
		assert.Contains(t, err.Error(), "alice:****")
	}
}
