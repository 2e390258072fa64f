package errclass

import (
	"fmt"
	"slices"
	"strings"

	"github.com/npud/npud/npu"
)

// AliasHint is how an unknown model's 404 tells, on every API, to make
// npud answer to the name: agents ask for their own model names.
const AliasHint = "to answer to this name, start npud with --alias NAME=MODEL (or NPUD_ALIAS, or an [alias] table in the configuration file)"

// maxListedModels bounds the served names a 404 lists.
const maxListedModels = 8

// ModelLister is what ServedNames needs of a router.
type ModelLister interface {
	Models() []npu.ModelInfo
}

// ServedNames are the names router answers to (models and aliases), for
// ModelNotFound.
func ServedNames(router ModelLister) []string {
	models := router.Models()
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.ID
	}
	return names
}

// ModelNotFound says that err's model is not served, lists what is (at
// most maxListedModels names, sorted), and gives AliasHint. how, when set,
// is the API's own first advice ("try pulling it first" on Ollama's).
func ModelNotFound(err error, served []string, how string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: it is not served here", err)
	if how != "" {
		b.WriteString(", " + how)
	}
	if len(served) > 0 {
		served = slices.Clone(served)
		slices.Sort(served)
		more := ""
		if len(served) > maxListedModels {
			more = fmt.Sprintf(" and %d more", len(served)-maxListedModels)
			served = served[:maxListedModels]
		}
		fmt.Fprintf(&b, " (served: %s%s)", strings.Join(served, ", "), more)
	}
	b.WriteString("; " + AliasHint)
	return b.String()
}
