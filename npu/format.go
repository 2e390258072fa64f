package npu

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// FormatParam is the parameter a refused structured output is charged to
// below the APIs (an InvalidRequestError's Param): OpenAI chat's name,
// which each other API renames to its own field (text.format, format,
// output_config.format).
const FormatParam = "response_format"

// MaxSchemaBytes bounds the JSON Schema of a structured output: far more
// than any schema a client library generates, and small enough that
// compiling and holding one costs little.
const MaxSchemaBytes = 64 << 10

// CheckFormatSchema is what every API asks of a structured output's
// schema before the router compiles it: a JSON object, at most
// MaxSchemaBytes long. The error says what is wrong; the API names its
// own parameter.
func CheckFormatSchema(schema json.RawMessage) error {
	t := bytes.TrimSpace(schema)
	switch {
	case len(t) == 0 || bytes.Equal(t, []byte("null")):
		return fmt.Errorf("a JSON Schema is required")
	case t[0] != '{':
		return fmt.Errorf("the schema must be a JSON object")
	case len(t) > MaxSchemaBytes:
		return fmt.Errorf("the schema is %d bytes long: at most %d are allowed", len(t), MaxSchemaBytes)
	}
	return nil
}
