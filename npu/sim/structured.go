package sim

import (
	"math/rand/v2"
	"unicode/utf8"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/jsonschema"
)

// Document is the simulated model's answer to a request that asks for
// structured output (Request.Format): a document valid against its schema
// (any JSON object in JSON mode), jsonschema's Generate of the request's
// seed, so a client's structured path gets a document it can parse and
// check, the same for the same seed.
func Document(req *npu.Request) ([]byte, error) {
	var schema *jsonschema.Schema
	switch req.Format.Type {
	case npu.FormatJSONObject:
		schema = jsonschema.AnyObject()
	case npu.FormatJSONSchema:
		var err error
		if schema, err = jsonschema.Compile(req.Format.Schema); err != nil {
			// The router refuses such a request first; an engine called
			// directly says so too.
			return nil, &npu.InvalidRequestError{Param: "response_format", Message: err.Error()}
		}
	default:
		return nil, &npu.InvalidRequestError{Param: "response_format", Message: "unknown format type " + req.Format.Type}
	}
	return schema.Generate(seedOf(req)), nil
}

// documentTokens cuts a document into tokens of one to six bytes, never
// inside a character, as a tokenizer cuts JSON: chosen by seed.
func documentTokens(seed int64, doc []byte) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6a736f6e)) //nolint:gosec // simulated text, not secrets
	var out []string
	for len(doc) > 0 {
		n := min(1+rng.IntN(6), len(doc))
		for n < len(doc) && !utf8.RuneStart(doc[n]) {
			n++
		}
		out = append(out, string(doc[:n]))
		doc = doc[n:]
	}
	return out
}
