package reqinfo

import (
	"net/http"

	"github.com/npud/npud/npu/wirefmt/jsonbody"
)

// Named is a request body that names the model it asks for.
type Named interface{ ModelName() string }

// Decode is how every API handler starts on r: its body decoded into
// body (with jsonbody's checks and errors), and the model it names
// recorded in the request's record for the access log and the metrics. A
// body that does not decode comes back as its error, for the API to
// answer in its own shape.
func Decode(r *http.Request, body Named) *jsonbody.Error {
	if err := jsonbody.Decode(r, body); err != nil {
		return err
	}
	From(r.Context()).Model = body.ModelName()
	return nil
}
