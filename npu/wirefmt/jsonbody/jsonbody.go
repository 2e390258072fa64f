// Package jsonbody reads and decodes JSON request bodies for every API, so
// that a body over the size limit, invalid UTF-8, malformed JSON and a field
// of the wrong type get the same clear error whatever the protocol; each
// API renders it in its own error shape.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"unicode/utf8"
)

// Error is a request body that could not be decoded.
type Error struct {
	Status  int    // 400, or 413 for a body over the limit
	Code    string // request_too_large, invalid_utf8, invalid_json, invalid_type, invalid_body
	Field   string // the JSON path of a field of the wrong type, else ""
	Message string
}

func (e *Error) Error() string { return e.Message }

// Decode reads r's body (already capped by the daemon's MaxBytesReader) and
// decodes it into v.
func Decode(r *http.Request, v any) *Error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large",
				Message: fmt.Sprintf("request body is larger than the limit of %d bytes", tooBig.Limit)}
		}
		return &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: fmt.Sprintf("reading request body: %v", err)}
	}
	return Unmarshal(body, v)
}

// Unmarshal decodes body into v, naming the field at fault.
func Unmarshal(body []byte, v any) *Error {
	// encoding/json would silently turn invalid UTF-8 into U+FFFD.
	if !utf8.Valid(body) {
		return &Error{Status: http.StatusBadRequest, Code: "invalid_utf8", Message: "request body is not valid UTF-8"}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return &Error{Status: http.StatusBadRequest, Code: "invalid_json", Message: "the request body is empty: it must be a JSON object"}
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	// The decoder's own text names Go types ("cannot unmarshal array into
	// Go value of type ..."): each case is said in the client's terms.
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &Error{Status: http.StatusBadRequest, Code: "invalid_type", Field: typeErr.Field,
			Message: fmt.Sprintf("invalid type for field '%s': expected %s, got %s", typeErr.Field, Describe(typeErr.Type), typeErr.Value)}
	case errors.As(err, &typeErr):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_type",
			Message: fmt.Sprintf("the request body must be %s, got %s", Describe(typeErr.Type), typeErr.Value)}
	case errors.As(err, &syntaxErr) && syntaxErr.Offset >= int64(len(body)):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_json",
			Message: fmt.Sprintf("the request body is not valid JSON: it ends at byte %d before its JSON does (%v)", len(body), err)}
	case errors.As(err, &syntaxErr):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_json",
			Message: fmt.Sprintf("the request body is not valid JSON: at byte %d, %v", syntaxErr.Offset, err)}
	}
	return &Error{Status: http.StatusBadRequest, Code: "invalid_json", Message: fmt.Sprintf("the request body is not valid JSON: %v", err)}
}

// TypeError is what a custom UnmarshalJSON returns for a value of the wrong
// kind; the decoder fills in the field's path.
func TypeError(raw []byte, want reflect.Type) error {
	return &json.UnmarshalTypeError{Value: Kind(raw), Type: want}
}

// Describe names a Go type the way a JSON client thinks of it.
func Describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a string or an array of strings"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// Kind names the JSON kind of a raw value.
func Kind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == '"':
		return "string"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	}
	return "number"
}
