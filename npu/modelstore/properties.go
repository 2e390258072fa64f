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
	"slices"
	"sort"
	"strconv"
	"strings"
)

// PropertiesFile is the file in a model's folder that sets engine
// properties its pipeline is compiled with (MAX_PROMPT_LEN,
// NPUW_LLM_PREFILL_CHUNK_SIZE, ...): one JSON object of property names and
// values. A model folder comes from anywhere (a pull fetches this file with
// the rest of a repository), so it is untrusted: it may set only the
// properties of FolderProperties, within their bounds, and only where the
// operator's configuration leaves npud's default (see the engine).
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

// folderProperty is one property a model folder may set, and the values
// it may take (as passed: integers in decimal, booleans as YES and NO).
type folderProperty struct {
	check func(value string) error
}

// FolderProperties are the properties a model folder may set: how its
// pipeline is shaped and compiled for the NPU, never where anything is
// read or written (CACHE_DIR, NPUW's dump folders) nor a nested
// configuration that could carry either (PREFILL_CONFIG, GENERATE_CONFIG).
// The names are GenAI's and NPUW's:
//   - MAX_PROMPT_LEN, MIN_RESPONSE_LEN: openvino.genai src/cpp/src/utils.cpp
//     (get_npu_model_config, pop_int_and_cast);
//   - PREFILL_HINT, GENERATE_HINT: utils.cpp update_npu_config, which
//     renames them to NPUW_LLM_PREFILL_HINT and NPUW_LLM_GENERATE_HINT;
//   - NPUW_LLM_PREFILL_CHUNK_SIZE, NPUW_LLM_ENABLE_PREFIX_CACHING,
//     NPUW_LLM_PREFIX_CACHING_BLOCK_SIZE, NPUW_LLM_PREFIX_CACHING_MAX_NUM_BLOCKS:
//     openvino src/plugins/intel_npu/src/al/include/intel_npu/config/npuw.hpp;
//   - STATIC_PIPELINE: src/cpp/src/whisper/pipeline.cpp (YES or NO) and
//     src/cpp/src/llm/pipeline_static.cpp (STATEFUL);
//   - ATTENTION_BACKEND: src/cpp/src/utils.cpp (PA_BACKEND, SDPA_BACKEND);
//   - PERFORMANCE_HINT: OpenVINO's ov::hint::performance_mode.
//
// The bounds keep a folder from asking for a pipeline no box can hold.
var FolderProperties = map[string]folderProperty{
	"MAX_PROMPT_LEN":                         {intIn(1, maxFolderTokens)},
	"MIN_RESPONSE_LEN":                       {intIn(1, maxFolderTokens)},
	"NPUW_LLM_PREFILL_CHUNK_SIZE":            {powerOfTwo(maxFolderTokens)},
	"NPUW_LLM_ENABLE_PREFIX_CACHING":         {oneOf("YES", "NO")},
	"NPUW_LLM_PREFIX_CACHING_BLOCK_SIZE":     {intIn(1, maxFolderTokens)},
	"NPUW_LLM_PREFIX_CACHING_MAX_NUM_BLOCKS": {intIn(1, 1<<16)},
	"PREFILL_HINT":                           {oneOf("DYNAMIC", "STATIC")},
	"GENERATE_HINT":                          {oneOf("FAST_COMPILE", "BEST_PERF")},
	"PERFORMANCE_HINT":                       {oneOf("LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT")},
	"STATIC_PIPELINE":                        {oneOf("YES", "NO", "STATEFUL")},
	"ATTENTION_BACKEND":                      {oneOf("PA", "SDPA")},
}

// maxFolderTokens bounds the token counts a folder may ask for: 256k, far
// past any NPU pipeline's, short of sizes that only exhaust memory.
const maxFolderTokens = 1 << 18

// pathProperties are properties OpenVINO reads as paths: a folder never
// sets them (the compile cache is the operator's --cache-dir).
var pathProperties = map[string]bool{
	"CACHE_DIR": true, "NPUW_DUMP_FULL": true, "NPUW_DUMP_SUBS": true, "NPUW_DUMP_IO": true,
	"NPUW_DUMP_SUBS_ON_FAIL": true, "NPUW_DUMP_IO_ITERS": true, "NPUW_WEIGHTS_BANK_ALLOC": true,
	"EXPORT_BLOB": true, "BLOB_PATH": true, "CACHE_MODE": true, "WEIGHTS_PATH": true,
}

func intIn(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q is not an integer from %d to %d", v, lo, hi)
		}
		return nil
	}
}

func powerOfTwo(hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > hi || n&(n-1) != 0 {
			return fmt.Errorf("%q is not a power of two up to %d (NPUW refuses others)", v, hi)
		}
		return nil
	}
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("%q is not one of %s", v, strings.Join(values, ", "))
	}
}

// ErrPropertyRefused is wrapped by the error of a properties file that
// sets what a model folder may not.
var ErrPropertyRefused = errors.New("a model folder may not set it")

// ReadProperties reads dir's PropertiesFile; no file is no properties.
// Values are typed in the file and passed as OpenVINO parses them: a string
// as it is, an integer in decimal, true and false as YES and NO (the
// spelling every OpenVINO plugin's boolean options accept). Anything else
// (a fraction, an object, an array, null) is refused, naming the property;
// so is a property a model folder may not set (FolderProperties), with
// why: every such property is named, none is dropped silently.
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
	var refused []string
	for key, v := range values {
		if !propertyName.MatchString(key) {
			return nil, fmt.Errorf("%s: %q is not an OpenVINO property name (capitals, digits and underscores)", path, key)
		}
		s, err := propertyValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: property %s: %w", path, key, err)
		}
		if why := folderRefusal(key, s); why != "" {
			refused = append(refused, key+": "+why)
			continue
		}
		out = append(out, Property{key, s})
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, fmt.Errorf("%s: %w: %s", path, ErrPropertyRefused, strings.Join(refused, "; "))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// folderRefusal says why a model folder may not set key to value, or "".
func folderRefusal(key, value string) string {
	if pathProperties[key] || strings.ContainsAny(value, `/\`) {
		return "a path (a model folder never names where the engine reads or writes; the compile cache is the operator's --cache-dir)"
	}
	p, ok := FolderProperties[key]
	if !ok {
		return "not a property a model folder may set (it may set " + strings.Join(FolderPropertyNames(), ", ") + ")"
	}
	if err := p.check(value); err != nil {
		return err.Error()
	}
	return ""
}

// FolderPropertyNames lists FolderProperties' names, sorted.
func FolderPropertyNames() []string {
	names := make([]string, 0, len(FolderProperties))
	for k := range FolderProperties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
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
// them and the operator did not (operator: the properties the operator's
// configuration sets, which win). A properties file that cannot be read
// or is refused leaves the engine's values (the compile reports the error).
func NPULimits(maxPrompt, minResponse int, operator []string) Limits {
	return func(dir string) (int, int) {
		p, r := NPUPromptLimits(dir, maxPrompt, minResponse, operator)
		return p + r - 1, p
	}
}

// NPUPromptLimits are MAX_PROMPT_LEN and MIN_RESPONSE_LEN for the model in
// dir: the model's PropertiesFile where the operator set neither, else the
// engine's values, else GenAI's defaults (1024 and 128: utils.cpp
// get_npu_model_config).
func NPUPromptLimits(dir string, maxPrompt, minResponse int, operator []string) (prompt, response int) {
	prompt, response = maxPrompt, minResponse
	props, _ := ReadProperties(dir)
	for _, p := range props {
		n, err := strconv.Atoi(p.Value)
		if err != nil || n < 0 || slices.Contains(operator, p.Key) {
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
