package jsonschema_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/jsonschema"
)

func TestGenerate(t *testing.T) {
	for name, schema := range corpus {
		t.Run(name, func(t *testing.T) {
			s := compile(t, schema)
			distinct := map[string]bool{}
			for seed := range int64(50) {
				doc := s.Generate(seed)
				require.NoError(t, s.Validate(doc), "seed %d: %s", seed, doc)
				assert.True(t, json.Valid(doc), "%s", doc)
				assert.Equal(t, doc, s.Generate(seed), "the same seed, the same document")
				assert.Less(t, len(doc), 4096, "small: %s", doc)
				distinct[string(doc)] = true
			}
			if name != "const" && name != "escaped keys" {
				assert.Greater(t, len(distinct), 1, "seeds vary the document")
			}
		})
	}
}

func TestAnyObject(t *testing.T) {
	s := jsonschema.AnyObject()
	for _, doc := range []string{`{}`, ` {"a": [1, {"b": null}], "c": "d"} `} {
		assert.NoError(t, s.Validate([]byte(doc)), doc)
	}
	for _, doc := range []string{`[]`, `"x"`, `1`, `null`, `{"a": 1, "a": 2}`, `{"a": 1} {}`} {
		assert.Error(t, s.Validate([]byte(doc)), doc)
		m := s.NewMatcher()
		assert.False(t, m.Push(doc) && m.Complete(), doc)
	}
	assert.Equal(t, "{", s.NewMatcher().Forced())
	for seed := range int64(20) {
		doc := s.Generate(seed)
		require.NoError(t, s.Validate(doc), "%s", doc)
		require.Equal(t, byte('{'), doc[0])
	}
}

// pieces cuts text into pieces whose lengths cuts chooses (1 to 8 bytes).
func pieces(text string, cuts []byte) []string {
	var out []string
	for i := 0; len(text) > 0; i++ {
		n := 1
		if len(cuts) > 0 {
			n = 1 + int(cuts[i%len(cuts)]%8)
		}
		n = min(n, len(text))
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func FuzzMatcher(f *testing.F) {
	names := make([]string, 0, len(corpus))
	for name := range corpus {
		names = append(names, name)
	}
	slices.Sort(names)
	schemas := make([]*jsonschema.Schema, len(names))
	for i, name := range names {
		schemas[i] = compile(f, corpus[name])
	}
	for i := range names {
		f.Add(uint8(i), int64(i), []byte{1, 7, 2}, 3, `}`)
	}
	f.Add(uint8(0), int64(0), []byte{0}, 0, `{"name": "\ud83d\ude00", "age": 1e5}`)
	f.Add(uint8(3), int64(9), []byte{5, 5}, 10, "\"\xf0\x9f\x98")
	f.Fuzz(func(t *testing.T, which uint8, seed int64, cuts []byte, keep int, tail string) {
		s := schemas[int(which)%len(schemas)]
		doc := string(s.Generate(seed))
		require.NoError(t, s.Validate([]byte(doc)))
		m := s.NewMatcher()
		for _, p := range pieces(doc, cuts) {
			require.True(t, m.Push(p), "a split of %q refused at %q", doc, p)
		}
		require.True(t, m.Complete(), doc)
		require.Equal(t, len(doc), m.ValidLen())

		// Any text: a valid prefix of the generated document and anything
		// after it. No panic, ValidLen within what was pushed, the same
		// verdict as Validate, a kept prefix that is one.
		keep = min(max(keep, 0), len(doc))
		text := doc[:keep] + tail
		m = s.NewMatcher()
		ok := true
		for _, p := range pieces(text, cuts) {
			ok = m.Push(p)
		}
		require.LessOrEqual(t, m.ValidLen(), len(text))
		assert.Equal(t, s.Validate([]byte(text)) == nil, ok && m.Complete(), "%q", text)
		kept := s.NewMatcher()
		require.True(t, kept.Push(text[:m.ValidLen()]), "the kept prefix %q is refused", text[:m.ValidLen()])
		forced := m.Forced()
		assert.True(t, kept.Push(forced), "forced %q after %q is refused", forced, text[:m.ValidLen()])
		if ok {
			assert.Equal(t, len(text), m.ValidLen())
		}
	})
}

// Near-valid documents are where two readers most likely part: every
// generated document with one byte dropped, doubled or replaced by a
// byte JSON gives meaning to, read by Validate and by the matcher.
func TestValidateAgreesWithTheMatcherNearValidDocuments(t *testing.T) {
	for name, schema := range corpus {
		s := compile(t, schema)
		for seed := range int64(5) {
			doc := string(s.Generate(seed))
			for i := range len(doc) {
				for _, mutant := range []string{doc[:i] + doc[i+1:], doc[:i] + doc[i:i+1] + doc[i:],
					doc[:i] + "9" + doc[i+1:], doc[:i] + `"` + doc[i+1:], doc[:i] + "," + doc[i+1:], doc[:i] + "-" + doc[i+1:]} {
					m := s.NewMatcher()
					ok := m.Push(mutant) && m.Complete()
					require.Equal(t, s.Validate([]byte(mutant)) == nil, ok, "%s: %q", name, mutant)
				}
			}
		}
	}
}
