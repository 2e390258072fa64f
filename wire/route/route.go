// Package route is how an API declares what its routes do, so that the
// daemon's accounting and guards (stream metrics, the admin role for model
// management, the WebSocket's token) follow
// the APIs instead of a list of paths kept beside them: a new generation
// route cannot escape them.
package route

// Set is one API's routes by what they do; the paths are the route
// templates the API registers.
type Set struct {
	Generation      []string // start engine work: stream metrics
	ModelManagement []string // change the models folder for every tenant: the admin role
	WebSocket       []string // browsers cannot send headers on the handshake: the key may come as ?token=
}

// Table answers what a path is, for the union of sets.
type Table struct {
	generation, management, websocket map[string]bool
}

// NewTable merges sets.
func NewTable(sets ...Set) Table {
	t := Table{generation: map[string]bool{}, management: map[string]bool{}, websocket: map[string]bool{}}
	for _, s := range sets {
		for _, p := range s.Generation {
			t.generation[p] = true
		}
		for _, p := range s.ModelManagement {
			t.management[p] = true
		}
		for _, p := range s.WebSocket {
			t.websocket[p] = true
		}
	}
	return t
}

func (t Table) Generation(path string) bool      { return t.generation[path] }
func (t Table) ModelManagement(path string) bool { return t.management[path] }
func (t Table) WebSocket(path string) bool       { return t.websocket[path] }
