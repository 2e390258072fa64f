package daemon

import (
	"io"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every Config field is named in logs by its configuration key: the flag
// and TOML name operators write, never the Go field name.
func TestEveryConfigFieldHasItsConfigurationKey(t *testing.T) {
	_, fs, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if f.Tag.Get("config") == "derived" {
				continue // read from the keys, not one itself
			}
			assert.NotNil(t, fs.Lookup(configKey(f.Name)), "field %s: %q is not a configuration key", f.Name, configKey(f.Name))
		}
	}
	walk(reflect.TypeOf(Config{}))
}
