package jsonbody

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sample struct {
	N     *int     `json:"n"`
	Names []string `json:"names"`
	Inner struct {
		On bool `json:"on"`
	} `json:"inner"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		limit  int64
		status int
		code   string
		field  string
	}{
		{"valid", `{"n":1,"names":["a"],"inner":{"on":true}}`, 1 << 10, 0, "", ""},
		{"too large", `{"names":["` + strings.Repeat("a", 100) + `"]}`, 50, 413, "request_too_large", ""},
		{"invalid UTF-8", "{\"names\":[\"\xff\"]}", 1 << 10, 400, "invalid_utf8", ""},
		{"truncated", `{"n":`, 1 << 10, 400, "invalid_json", ""},
		{"wrong type", `{"n":"1"}`, 1 << 10, 400, "invalid_type", "n"},
		{"wrong nested type", `{"inner":{"on":"yes"}}`, 1 << 10, 400, "invalid_type", "inner.on"},
		{"wrong element type", `{"names":[1]}`, 1 << 10, 400, "invalid_type", "names"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", strings.NewReader(tc.body))
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, tc.limit)
			var v sample
			err := Decode(r, &v)
			if tc.status == 0 {
				require.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			assert.Equal(t, tc.status, err.Status)
			assert.Equal(t, tc.code, err.Code)
			assert.Equal(t, tc.field, err.Field)
			if tc.field != "" {
				assert.Contains(t, err.Message, tc.field)
			}
		})
	}
}
