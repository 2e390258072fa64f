package jsonschema

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Generate writes a small document valid against the schema, the same for
// the same seed (the simulated engine's answer). It is written the way
// Forced writes what the schema fixes: `{"a": 1, "b": [true]}`.
func (s *Schema) Generate(seed int64) []byte {
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x6a736f6e736368))} //nolint:gosec // test data, not secrets
	g.write(s.root, generateDepth)
	return []byte(g.b.String())
}

// generateDepth is how deep Generate nests where the schema lets it choose.
const generateDepth = 4

type generator struct {
	rng *rand.Rand
	b   strings.Builder
}

var words = [...]string{"alpha", "npu", "stream", "token", "quiet", "edge", "model", "answer", "river", "cobalt"}

func (g *generator) write(n *node, budget int) {
	switch n.kind {
	case kRef:
		g.write(n.target, budget)
		return
	case kUnion:
		g.write(g.choose(n.flat, budget), budget)
		return
	case kObject:
		g.object(n, budget)
	case kArray:
		g.array(n, budget)
	case kString:
		g.b.WriteByte('"')
		if n.exact != nil {
			g.b.WriteString(escape(*n.exact))
		} else {
			g.b.WriteString(g.text(n.minLen, n.maxLen))
		}
		g.b.WriteByte('"')
	case kNumber, kInteger:
		text, _, _ := generateNumber(n, g.rng.IntN(1000))
		g.b.WriteString(text)
	case kBool:
		b := g.rng.IntN(2) == 0
		if n.exactBool != nil {
			b = *n.exactBool
		}
		g.b.WriteString(strconv.FormatBool(b))
	case kNull:
		g.b.WriteString("null")
	}
}

// choose picks an alternative that fits in budget, else the shallowest.
func (g *generator) choose(alts []*node, budget int) *node {
	var fit []*node
	best := alts[0]
	for _, a := range alts {
		if a.minDepth <= budget {
			fit = append(fit, a)
		}
		if a.minDepth < best.minDepth {
			best = a
		}
	}
	if len(fit) == 0 {
		return best
	}
	return fit[g.rng.IntN(len(fit))]
}

func (g *generator) object(n *node, budget int) {
	g.b.WriteByte('{')
	first := true
	member := func(name string, s *node) {
		if !first {
			g.b.WriteString(", ")
		}
		first = false
		g.b.WriteString(`"` + escape(name) + `": `)
		g.write(s, budget-1)
	}
	for _, p := range n.props {
		if p.required || p.schema.minDepth < budget && g.rng.IntN(2) == 0 {
			member(p.name, p.schema)
		}
	}
	if len(n.props) == 0 && n.additional != nil && n.additional.minDepth < budget {
		// A free-form object (JSON mode): a key or two of small values.
		k := 1 + g.rng.IntN(2)
		start := g.rng.IntN(len(words))
		for i := range k {
			member(words[(start+i)%len(words)], n.additional)
		}
	}
	g.b.WriteByte('}')
}

func (g *generator) array(n *node, budget int) {
	g.b.WriteByte('[')
	items := n.tuple
	if !n.isTuple {
		count := n.minItems
		if n.items.minDepth < budget {
			count += g.rng.IntN(3)
		}
		if n.maxItems >= 0 {
			count = min(count, n.maxItems)
		}
		for range count {
			items = append(items, n.items)
		}
	}
	for i, it := range items {
		if i > 0 {
			g.b.WriteString(", ")
		}
		g.write(it, budget-1)
	}
	g.b.WriteByte(']')
}

// text is words of a length from minLen to maxLen (maxLen < 0: no bound).
func (g *generator) text(minLen, maxLen int) string {
	hi := minLen + 16
	if maxLen >= 0 {
		hi = min(hi, maxLen)
	}
	length := minLen + g.rng.IntN(hi-minLen+1)
	var b strings.Builder
	for b.Len() < length {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[g.rng.IntN(len(words))])
	}
	s := b.String()[:length]
	if strings.HasSuffix(s, " ") {
		s = s[:length-1] + "x"
	}
	return s
}

// generateNumber is a number within n's bounds (pick chooses among a few),
// its value, and false when there is none Generate can write.
func generateNumber(n *node, pick int) (string, float64, bool) {
	if n.exactNum != nil {
		return n.exactNum.str, n.exactNum.num, true
	}
	lo, hi := 0.0, 100.0
	switch {
	case n.hasMin && n.hasMax:
		lo, hi = n.min, n.max
	case n.hasMin:
		lo, hi = n.min, n.min+100
	case n.hasMax:
		lo, hi = n.max-100, n.max
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) || hi < lo {
		return "", 0, false
	}
	// Integers first: short, and valid for both types.
	ilo, ihi := math.Ceil(lo), math.Floor(hi)
	if ilo == lo && n.hasMin && n.exclusiveMin {
		ilo++
	}
	if ihi == hi && n.hasMax && n.exclMx {
		ihi--
	}
	if ilo <= ihi && math.Abs(ilo) < 1e15 && math.Abs(ihi) < 1e15 {
		x := ilo + float64(pick%int(min(ihi-ilo+1, 1000)))
		return strconv.FormatFloat(x, 'f', 0, 64), x, true
	}
	if n.kind == kInteger {
		return "", 0, false
	}
	x := lo + (hi-lo)/2
	if !numberAllowed(n, x) {
		return "", 0, false
	}
	return strconv.FormatFloat(x, 'g', -1, 64), x, true
}

// escape writes s as the inside of a JSON string: quotes, backslashes and
// control characters escaped, everything else as it is.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
