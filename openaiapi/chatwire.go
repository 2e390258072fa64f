package openaiapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/openaichat"
)

// OpenAI's chat request and error object are read and written in
// wire/openaichat, which npud's WebSocket uses too (its start messages are
// chat requests), and declared in npu/wirefmt/openaiwire, which the upstream
// engine, their client, uses: the names here are the API's for them.
type (
	// Error is an OpenAI-shaped API error: an HTTP status and the body
	// {"error":{"message","type","param","code"}}.
	Error = openaichat.Error
	// ModelFinder is what reading a request needs of the router.
	ModelFinder = openaichat.ModelFinder

	request         = openaiwire.ChatRequest
	message         = openaiwire.Message
	contentText     = openaiwire.Content
	stopList        = openaiwire.StopList
	messageToolCall = openaiwire.ToolCall
	toolDef         = openaiwire.Tool
	endpoint        = openaichat.Endpoint
)

const (
	chatEndpoint        = openaichat.Chat
	completionsEndpoint = openaichat.Completions
)

// statusClientClosed is logged for a client that went away before its
// response began.
const statusClientClosed = errclass.StatusClientClosed

// WriteError answers with e before any byte of the response was written.
func WriteError(w http.ResponseWriter, e *Error) { openaichat.WriteError(w, e) }

// ErrorOf is err as OpenAI's error object, classified by npu's one table
// (the admin routes answer in OpenAI's shape too).
func ErrorOf(err error, retryAfter func() time.Duration) *Error {
	return openaichat.ErrorOf(err, retryAfter)
}

func toError(err error, retryAfter func() time.Duration) *Error {
	return openaichat.ErrorOf(err, retryAfter)
}

func invalid(param, code, format string, args ...any) *Error {
	return openaichat.Invalid(param, code, format, args...)
}

func bodyError(e *jsonbody.Error) *Error { return openaichat.BodyError(e) }

func isSet(raw json.RawMessage) bool { return openaichat.IsSet(raw) }
