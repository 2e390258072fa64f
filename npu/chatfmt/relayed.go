package chatfmt

import "encoding/json"

// Relayed is no model's format: it is how an engine that receives calls
// already structured (an upstream server's delta.tool_calls) hands them to
// the bridge in its text,
//
//	\x00call\x00{"id": …, "name": …, "arguments": "…"}\x00/call\x00
//
// and its reasoning between <think> and </think>. The engine keeps NUL out
// of every text it relays, so no text can open a call.
type Relayed struct{}

// The markers of a Relayed call.
const (
	relayedCallOpen  = "\x00call\x00"
	relayedCallClose = "\x00/call\x00"
)

func (Relayed) syntax() jsonSyntax {
	return jsonSyntax{openers: []string{relayedCallOpen}, closers: []string{relayedCallClose}}
}

// Name implements Family.
func (Relayed) Name() string { return "relayed" }

// Recognise implements Family: no model writes it.
func (Relayed) Recognise(string, string) Match { return NoMatch }

// NewCallParser implements Family.
func (f Relayed) NewCallParser(opts ParserOptions) CallParser {
	return newJSONCallParser(f.syntax(), opts)
}

// NewReasoningSplitter implements Family.
func (Relayed) NewReasoningSplitter() ReasoningSplitter { return NewThinkTags(ThinkOpen, ThinkClose) }

// WriteCalls implements Family. The arguments go as a JSON string, as the
// upstream sent them: they are its text, whole or not.
func (Relayed) WriteCalls(calls []Call) string {
	var out []byte
	for _, c := range calls {
		obj, _ := json.Marshal(struct { // strings only: always encodes, NUL and quotes escaped
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{c.ID, c.Name, c.Arguments})
		out = append(append(append(out, relayedCallOpen...), obj...), relayedCallClose...)
	}
	return string(out)
}

// ToolsInSystemMessage implements Family.
func (Relayed) ToolsInSystemMessage() bool { return false }
