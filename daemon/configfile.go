package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// applyFile sets flags from a TOML file whose keys are the flag names:
//
//	listen = "0.0.0.0:11434"
//	max-queue = 32
//	api-key = ["alice:...", "ops:...:admin"]
//	[alias]
//	llama = "Llama-3.2-1B-int4-ov"
//
// Values go through the flags' own parsers, so the file accepts exactly
// what a flag accepts and reports the same errors.
func applyFile(fs *flag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the configuration file: %w", err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var derr *toml.DecodeError
		if errors.As(err, &derr) {
			row, col := derr.Position()
			return fmt.Errorf("%s:%d:%d: %w", path, row, col, err)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic errors
	var errs []error
	for _, key := range keys {
		if key == "config" || fs.Lookup(key) == nil {
			errs = append(errs, fmt.Errorf("%s: unknown key %q (the keys are the flag names of npud serve -h, without --config)", path, key))
			continue
		}
		values, err := fileValues(doc[key])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", path, key, err))
			continue
		}
		for _, v := range values {
			if err := fs.Set(key, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s = %q: %w", path, key, maskIf(key, v), err))
			}
		}
	}
	return errors.Join(errs...)
}

// fileValues turns one TOML value into the strings its flag parses: an
// array gives one value per element, a table one KEY=VALUE per entry.
func fileValues(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case bool:
		return []string{strconv.FormatBool(v)}, nil
	case int64:
		return []string{strconv.FormatInt(v, 10)}, nil
	case float64:
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, err := fileValues(e)
			if err != nil || len(s) != 1 {
				return nil, fmt.Errorf("array elements must be strings or numbers")
			}
			out = append(out, s[0])
		}
		if len(out) == 0 {
			return []string{""}, nil // an empty array clears the list
		}
		return out, nil
	case map[string]any:
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		sort.Strings(names)
		out := make([]string, 0, len(v))
		for _, k := range names {
			s, ok := v[k].(string)
			if !ok {
				return nil, fmt.Errorf("table entry %q must be a string", k)
			}
			out = append(out, k+"="+s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// CheckConfig parses and validates the configuration as ParseServe does
// (file < environment < args; usage and flag errors on usageOut) and, when
// it is valid, writes the effective configuration to w in the file's own
// format with secrets masked, so `npud config check` output can seed a
// file. flag.ErrHelp when args asked for help.
func CheckConfig(args []string, getenv func(string) string, w, usageOut io.Writer) error {
	_, fs, err := parseConfig(args, getenv, usageOut)
	if err != nil {
		return err
	}
	printEffective(w, fs)
	return nil
}

// printEffective writes the configuration in the file's own format, with
// secrets masked.
func printEffective(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" {
			return
		}
		v := f.Value.String()
		if secretOption(f.Name) && v != "" {
			v = maskSecret(f.Name, v)
		}
		switch {
		case isList(f.Value):
			var items []string
			for _, it := range strings.Split(v, ",") {
				if it != "" {
					items = append(items, strconv.Quote(it))
				}
			}
			fmt.Fprintf(w, "%s = [%s]\n", f.Name, strings.Join(items, ", "))
		case isNumber(v), isBoolFlag(f):
			fmt.Fprintf(w, "%s = %s\n", f.Name, v)
		default:
			fmt.Fprintf(w, "%s = %s\n", f.Name, strconv.Quote(v))
		}
	})
}

func isList(v flag.Value) bool { _, ok := v.(*listValue); return ok }

func isNumber(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// maskSecret hides a secret's value; API keys keep their names, which are
// not secret and tell the operator which keys are set.
func maskSecret(name, v string) string {
	if name == "upstream" {
		var out []string
		for _, spec := range strings.Split(v, ",") {
			out = append(out, MaskUpstream(spec))
		}
		return strings.Join(out, ",")
	}
	if name != "api-key" {
		return "****"
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		k, err := ParseAPIKey(item)
		if err != nil {
			continue
		}
		masked := k.Name + ":****"
		if k.Admin {
			masked += ":admin"
		}
		out = append(out, masked)
	}
	return strings.Join(out, ",")
}

// explainedValue is a flag's value whose parse error says what the flag
// takes: the flag package's own is "parse error" alone.
type explainedValue struct{ flag.Value }

// explainValues makes every flag of fs say what it takes when a value
// does not parse, from a flag, the environment or the file alike.
func explainValues(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(flag.Getter); ok {
			f.Value = explainedValue{f.Value}
		}
	})
}

func (v explainedValue) Set(s string) error {
	err := v.Value.Set(s)
	if err == nil {
		return nil
	}
	var want string
	switch v.Value.(flag.Getter).Get().(type) {
	case bool:
		want = "true or false"
	case int, int64, uint, uint64:
		want = "a whole number"
	case float64:
		want = "a number"
	case time.Duration:
		want = "a duration such as 90s, 5m or 1h30m"
	default:
		return err
	}
	return fmt.Errorf("want %s (%w)", want, err)
}

// IsBoolFlag keeps a boolean flag usable alone (--flag).
func (v explainedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Get is the value, as the flag package's own values give it.
func (v explainedValue) Get() any { return v.Value.(flag.Getter).Get() }
