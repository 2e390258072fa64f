package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

// The simulated model writes tool calls as its family does (Config.Family,
// Qwen's by default), so its answers go through the bridge's parser like a
// real model's.

// plannedCall is the tool the simulated model calls for req, if any: with
// tools and a choice that allows calls, it calls one unless the last
// message is a tool's result (then it answers), so that a client's agent
// loop ends; "required" and a named function always get a call.
func plannedCall(req *npu.Request, rng *rand.Rand) (npu.Tool, bool) {
	if len(req.Tools) == 0 {
		return npu.Tool{}, false
	}
	switch req.ToolChoice.Mode {
	case npu.ToolChoiceNone:
		return npu.Tool{}, false
	case npu.ToolChoiceFunction:
		for _, t := range req.Tools {
			if t.Name == req.ToolChoice.Name {
				return t, true
			}
		}
		return npu.Tool{}, false
	case npu.ToolChoiceRequired:
	default:
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
			return npu.Tool{}, false
		}
	}
	if t, ok := namedTool(req); ok {
		return t, true
	}
	return req.Tools[rng.IntN(len(req.Tools))], true
}

// namedTool is the declared tool the last user message names, if any: the
// simulated model does as it is told, so that a test driving an agent with
// many tools (Codex sends a dozen) gets the call it asks for.
func namedTool(req *npu.Request) (npu.Tool, bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		var best npu.Tool
		for _, t := range req.Tools {
			if len(t.Name) > len(best.Name) && strings.Contains(m.Content, t.Name) {
				best = t
			}
		}
		return best, best.Name != ""
	}
	return npu.Tool{}, false
}

// ToolCallTokens is the simulated model's answer calling tool, as family
// writes it (a <tool_call> block for Qwen's), with arguments that satisfy
// the tool's JSON schema, in tokens of a few characters, as a tokenizer
// cuts JSON.
func ToolCallTokens(seed int64, prompt string, tool npu.Tool, family chatfmt.Family) []string {
	rng := rngFor(seed, "call: "+prompt)
	args, _ := json.Marshal(ExampleArguments(tool.Parameters, rng)) // built from JSON values: always encodes
	text := family.WriteCalls([]chatfmt.Call{{Name: tool.Name, Arguments: string(args)}})
	var out []string
	for len(text) > 0 {
		n := min(len(text), 1+rng.IntN(5))
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func rngFor(seed int64, text string) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, text)
	return rand.New(rand.NewPCG(h.Sum64(), uint64(seed)))
}

// schema is the part of JSON Schema the simulated model satisfies.
type schema struct {
	Type       json.RawMessage            `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Items      json.RawMessage            `json:"items"`
	Enum       []any                      `json:"enum"`
	Const      any                        `json:"const"`
	Minimum    *float64                   `json:"minimum"`
	Maximum    *float64                   `json:"maximum"`
	AnyOf      []json.RawMessage          `json:"anyOf"`
	OneOf      []json.RawMessage          `json:"oneOf"`
}

// ExampleArguments makes a value that satisfies the JSON schema raw,
// deterministically from rng: every property of an object (required or
// not), an enum's member, a number within its bounds.
func ExampleArguments(raw json.RawMessage, rng *rand.Rand) any {
	v := exampleValue(raw, rng, 0)
	if _, ok := v.(map[string]any); !ok {
		return map[string]any{} // arguments are an object whatever the schema says
	}
	return v
}

func exampleValue(raw json.RawMessage, rng *rand.Rand, depth int) any {
	var s schema
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil || depth > 8 {
		return map[string]any{}
	}
	switch {
	case s.Const != nil:
		return s.Const
	case len(s.Enum) > 0:
		return s.Enum[rng.IntN(len(s.Enum))]
	case len(s.AnyOf) > 0:
		return exampleValue(s.AnyOf[0], rng, depth+1)
	case len(s.OneOf) > 0:
		return exampleValue(s.OneOf[0], rng, depth+1)
	}
	typ := ""
	if json.Unmarshal(s.Type, &typ) != nil {
		var types []string
		if json.Unmarshal(s.Type, &types) == nil && len(types) > 0 {
			typ = types[0]
		}
	}
	if typ == "" && s.Properties != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		out := map[string]any{}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names) // map order must not change the answer
		for _, name := range names {
			out[name] = exampleValue(s.Properties[name], rng, depth+1)
		}
		for _, name := range s.Required {
			if _, ok := out[name]; !ok {
				out[name] = "value"
			}
		}
		return out
	case "array":
		return []any{exampleValue(s.Items, rng, depth+1)}
	case "string":
		return vocabulary[rng.IntN(len(vocabulary))]
	case "integer", "number":
		lo, hi := 0.0, 100.0
		if s.Minimum != nil {
			lo = *s.Minimum
		}
		if s.Maximum != nil {
			hi = *s.Maximum
		}
		if hi < lo {
			hi = lo
		}
		n := float64(int64(lo) + int64(rng.Float64()*(hi-lo)))
		if n < lo {
			n++
		}
		return int64(n)
	case "boolean":
		return rng.IntN(2) == 0
	case "null":
		return nil
	}
	return "value"
}

// describeImages is how the simulated model "sees" the last message's
// pictures: by their size.
func describeImages(req *npu.Request) []string {
	if len(req.Messages) == 0 {
		return nil
	}
	imgs := req.Messages[len(req.Messages)-1].Images
	if len(imgs) == 0 {
		return nil
	}
	parts := make([]string, len(imgs))
	for i, img := range imgs {
		parts[i] = fmt.Sprintf("%dx%d", img.Width, img.Height)
	}
	what := "an image of " + parts[0] + " pixels"
	if len(imgs) > 1 {
		what = fmt.Sprintf("%d images of %s pixels", len(imgs), strings.Join(parts, ", "))
	}
	return []string{"I", " see", " " + what + "."}
}
