package jsonschema_test

import (
	"strings"
	"testing"

	"github.com/npud/npud/npu/jsonschema"
)

// What holding an answer costs the bridge: a document pushed a byte at a
// time, as the bridge pushes it (go test -bench Matcher ./npu/jsonschema/).
func BenchmarkMatcher(b *testing.B) {
	steps := make([]string, 40)
	for i := range steps {
		steps[i] = `{"explanation": "the model explains step ` + strings.Repeat("x", i) + `", "output": "r\u00e9sultat 😀"}`
	}
	doc := `{"steps": [` + strings.Join(steps, ", ") + `], "final_answer": "done"}`
	for name, s := range map[string]*jsonschema.Schema{"schema": compile(b, corpus["definitions"]), "json mode": jsonschema.AnyObject()} {
		for _, forced := range []bool{false, true} {
			b.Run(map[bool]string{false: name + "/push", true: name + "/push+forced"}[forced], func(b *testing.B) {
				b.SetBytes(int64(len(doc)))
				b.ReportAllocs()
				for b.Loop() {
					m := s.NewMatcher()
					for i := range len(doc) {
						if !m.Push(doc[i : i+1]) {
							b.Fatal("refused")
						}
						if forced {
							_ = m.Forced() // what a constrained decoder asks at every token
						}
					}
					if !m.Complete() {
						b.Fatal("incomplete")
					}
				}
			})
		}
	}
}
