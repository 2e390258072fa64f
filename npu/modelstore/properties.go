package modelstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

// PropertiesFile is the file in a model's folder that sets the OpenVINO
// GenAI and plugin properties its pipeline is compiled with (MAX_PROMPT_LEN,
// NPUW_LLM_PREFILL_CHUNK_SIZE, CACHE_DIR, ...): one JSON object of property
// names and values. It wins over the engine's settings for that model.
const PropertiesFile = "npud-properties.json"

// Bounds of a properties file: it is read at every compile.
const (
	maxPropertiesBytes = 64 << 10
	maxProperties      = 24
	maxPropertyValue   = 4096
)

// propertyName is how OpenVINO spells a property: capitals, digits,
// underscores and dots, optionally led by "++" (NPUW's "add to the
// section" form, as in ++NPUW_LLM_PREFILL_CONFIG).
var propertyName = regexp.MustCompile(`^(\+\+)?[A-Z][A-Z0-9_.]{0,127}$`)

// Property is one pipeline property as the C API takes it: a string.
type Property struct{ Key, Value string }

// ReadProperties reads dir's PropertiesFile; no file is no properties.
// Values are typed in the file and passed as OpenVINO parses them: a string
// as it is, an integer in decimal, true and false as YES and NO (the
// spelling every OpenVINO plugin's boolean options accept). Anything else
// (a fraction, an object, an array, null) is refused, naming the property.
func ReadProperties(dir string) ([]Property, error) {
	path := filepath.Join(dir, PropertiesFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	raw, err := io.ReadAll(io.LimitReader(f, maxPropertiesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(raw) > maxPropertiesBytes {
		return nil, fmt.Errorf("%s is over %d KiB", path, maxPropertiesBytes>>10)
	}
	var values map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&values); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of property names and values: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: text after the JSON object", path)
	}
	if len(values) > maxProperties {
		return nil, fmt.Errorf("%s: %d properties, at most %d", path, len(values), maxProperties)
	}
	out := make([]Property, 0, len(values))
	for key, v := range values {
		if !propertyName.MatchString(key) {
			return nil, fmt.Errorf("%s: %q is not an OpenVINO property name (capitals, digits and underscores)", path, key)
		}
		s, err := propertyValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: property %s: %w", path, key, err)
		}
		out = append(out, Property{key, s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func propertyValue(v json.RawMessage) (string, error) {
	var val any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&val); err != nil {
		return "", err
	}
	switch x := val.(type) {
	case string:
		if len(x) > maxPropertyValue {
			return "", fmt.Errorf("a value over %d bytes", maxPropertyValue)
		}
		for _, c := range x {
			if c == 0 {
				return "", errors.New("a NUL in the value")
			}
		}
		return x, nil
	case bool:
		if x {
			return "YES", nil
		}
		return "NO", nil
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil || n < math.MinInt32 || n > math.MaxUint32 {
			return "", fmt.Errorf("%s is not an integer OpenVINO takes (write other numbers as strings)", x)
		}
		return strconv.FormatInt(n, 10), nil
	}
	return "", errors.New("a value must be a string, an integer or true/false")
}

// Limits is what a model in the folder dir reports: the context it serves
// (prompt and answer together) and the longest prompt it takes (0: no
// limit of its own below the context).
type Limits func(dir string) (context, prompt int)

// FixedContext reports the same context for every model.
func FixedContext(n int) Limits { return func(string) (int, int) { return n, 0 } }

// NPULimits reports a model compiled for the NPU: its prompt limit is
// MAX_PROMPT_LEN and its KV cache holds MAX_PROMPT_LEN + MIN_RESPONSE_LEN - 1
// tokens (GenAI, src/cpp/src/utils.cpp: get_npu_kv_cache_capacity, which
// reads back the values given, not NPUW's aligned shapes), from the
// engine's maxPrompt and minResponse unless the model's PropertiesFile sets
// them. A properties file that cannot be read leaves the engine's values
// (the compile reports the error).
func NPULimits(maxPrompt, minResponse int) Limits {
	return func(dir string) (int, int) {
		p, r := NPUPromptLimits(dir, maxPrompt, minResponse)
		return p + r - 1, p
	}
}

// NPUPromptLimits are MAX_PROMPT_LEN and MIN_RESPONSE_LEN for the model in
// dir: the model's PropertiesFile, else the engine's values, else GenAI's
// defaults (1024 and 128: utils.cpp get_npu_model_config).
func NPUPromptLimits(dir string, maxPrompt, minResponse int) (prompt, response int) {
	prompt, response = maxPrompt, minResponse
	props, _ := ReadProperties(dir)
	for _, p := range props {
		n, err := strconv.Atoi(p.Value)
		if err != nil || n < 0 {
			continue
		}
		switch p.Key {
		case "MAX_PROMPT_LEN":
			prompt = n
		case "MIN_RESPONSE_LEN":
			response = n
		}
	}
	if prompt <= 0 {
		prompt = 1024
	}
	if response <= 0 {
		response = 128
	}
	return prompt, response
}
