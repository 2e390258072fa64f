package daemon

import (
	"flag"
	"strings"
)

// ParseFlagsAnywhere is every npud command's one parsing rule: flags may
// come before, between or after the positional arguments, as Ollama's CLI
// takes them (`npud run MODEL "Say hello" --verbose`); "--" ends the
// flags, and what follows it is positional however it looks. It returns
// the positional arguments in order; an unknown flag is fs.Parse's error,
// which names it.
func ParseFlagsAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(arg) < 2 || arg[0] != '-' { // "-" alone is a positional (stdin)
			positional = append(positional, arg)
			continue
		}
		flags = append(flags, arg)
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
		f := fs.Lookup(name)
		if hasValue || f == nil || isBoolFlag(f) || i+1 == len(args) {
			continue // its value is in it, it takes none, or Parse names what is wrong
		}
		i++
		flags = append(flags, args[i]) // the flag's value, whatever it looks like
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	return positional, nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
