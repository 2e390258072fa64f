package packaging

import _ "embed"

//go:embed npud.toml
var defaultConfig string

// DefaultConfig returns the packaged /etc/npud/npud.toml: every key with
// its default, commented out. `npud service install` writes it where none
// exists, as the packages do.
func DefaultConfig() string { return defaultConfig }
