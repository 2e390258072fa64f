package reqinfo_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/wire/reqinfo"
)

type body struct {
	Model string `json:"model"`
	N     int    `json:"n"`
}

func (b *body) ModelName() string { return b.Model }

// Decode reads the body and records the model it names; a body that does
// not decode is jsonbody's error, and names no model.
func TestDecodeRecordsTheModel(t *testing.T) {
	for _, tc := range []struct {
		name, in, model, code string
	}{
		{"a body", `{"model":"sim","n":2}`, "sim", ""},
		{"malformed", `{"model":"sim",`, "", "invalid_json"},
		{"a field of the wrong type", `{"model":"sim","n":"two"}`, "", "invalid_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := &reqinfo.Info{}
			r := httptest.NewRequestWithContext(reqinfo.With(t.Context(), info), http.MethodPost, "/", strings.NewReader(tc.in))
			var b body
			err := reqinfo.Decode(r, &b)
			if tc.code != "" {
				require.NotNil(t, err)
				assert.Equal(t, tc.code, err.Code)
			} else {
				require.Nil(t, err)
			}
			assert.Equal(t, tc.model, info.Model)
		})
	}
}
