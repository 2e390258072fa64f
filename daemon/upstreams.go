package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/npud/npud/npu/modelstore"
	"github.com/npud/npud/npu/serve"
	"github.com/npud/npud/npu/upstream"
)

// UpstreamSpec is one --upstream: the engine's configuration and how many
// generations npud runs on it at once.
type UpstreamSpec struct {
	upstream.Config
	Slots int
}

// defaultUpstreamSlots is how many generations an upstream runs at once
// unless its spec says: servers such as vLLM batch many.
const defaultUpstreamSlots = 8

// ParseUpstream reads NAME=URL;models=A|B[;caps=tools|vision|thinking][;key=KEY]
// [;timeout=D][;health=D][;slots=N]: caps are what its models can do besides
// completion (relayed; the rest refused here), health how often an
// upstream out of rotation is checked.
// The key may come from the environment (NPUD_UPSTREAM_<NAME>_KEY), which
// keeps it out of command lines and files.
func ParseUpstream(spec string, getenv func(string) string) (UpstreamSpec, error) {
	fields := strings.Split(spec, ";")
	name, url, ok := strings.Cut(fields[0], "=")
	name, url = strings.TrimSpace(name), strings.TrimSpace(url)
	if !ok || name == "" || url == "" {
		return UpstreamSpec{}, fmt.Errorf("upstream %q: want NAME=URL;models=A|B", MaskUpstream(spec))
	}
	if err := modelstore.ValidName(name); err != nil || strings.ContainsAny(name, ":/") {
		return UpstreamSpec{}, fmt.Errorf("upstream %q: the name must be letters, digits, '.', '_' or '-'", name)
	}
	out := UpstreamSpec{Config: upstream.Config{Name: name, URL: url}, Slots: defaultUpstreamSlots}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return UpstreamSpec{}, fmt.Errorf("upstream %q: %q: want key=value", name, f)
		}
		switch k {
		case "models":
			for _, m := range strings.Split(v, "|") {
				if m = strings.TrimSpace(m); m != "" {
					out.Models = append(out.Models, m)
				}
			}
		case "key":
			out.APIKey = v
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return UpstreamSpec{}, fmt.Errorf("upstream %q: timeout %q: want a positive duration", name, v)
			}
			out.Timeout = d
		case "caps":
			for _, c := range strings.Split(v, "|") {
				switch c = strings.TrimSpace(c); c {
				case "tools", "vision", "thinking":
					out.Capabilities = append(out.Capabilities, c)
				case "":
				default:
					return UpstreamSpec{}, fmt.Errorf("upstream %q: capability %q: want tools, vision or thinking", name, c)
				}
			}
		case "health":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return UpstreamSpec{}, fmt.Errorf("upstream %q: health %q: want a positive duration", name, v)
			}
			out.HealthInterval = d
		case "slots":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return UpstreamSpec{}, fmt.Errorf("upstream %q: slots %q: want a positive number", name, v)
			}
			out.Slots = n
		default:
			return UpstreamSpec{}, fmt.Errorf("upstream %q: unknown option %q (models, caps, key, timeout, health, slots)", name, k)
		}
	}
	if len(out.Models) == 0 {
		return UpstreamSpec{}, fmt.Errorf("upstream %q: models=A|B is required: the models it serves", name)
	}
	if out.APIKey == "" {
		out.APIKey = getenv("NPUD_UPSTREAM_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name)) + "_KEY")
	}
	if err := out.Validate(); err != nil {
		// Its messages quote the URL, which may hold a password.
		return UpstreamSpec{}, errors.New(strings.ReplaceAll(err.Error(), out.URL, maskURL(out.URL)))
	}
	return out, nil
}

// startUpstreams makes a pool for each upstream, with the local pool's
// limits and observer.
func startUpstreams(cfg Config, getenv func(string) string, pc serve.PoolConfig, log *slog.Logger) ([]serve.Upstream, error) {
	var ups []serve.Upstream
	fail := func(err error) ([]serve.Upstream, error) {
		for _, up := range ups {
			up.Pool.Engine().Close() // their health checks
		}
		return nil, err
	}
	for _, spec := range cfg.Upstreams {
		us, err := ParseUpstream(spec, getenv)
		if err != nil {
			return fail(err)
		}
		engine, err := upstream.New(us.Config, log)
		if err != nil {
			return fail(err)
		}
		upc := pc
		upc.Slots, upc.Affinity, upc.MaxLoadedModels = us.Slots, serve.Affinity{}, 0
		upc.CompileCache, upc.Device = nil, "" // an upstream compiles nothing here
		upc.Models, upc.Store = nil, nil       // nor has a models folder here
		ups = append(ups, serve.Upstream{Name: us.Name, Pool: serve.NewPool(engine, upc, log),
			Healthy: func() bool { ok, _ := engine.Healthy(); return ok }})
		log.Info("upstream", "name", us.Name, "url", maskURL(us.URL), "models", us.Models, "slots", us.Slots)
	}
	return ups, nil
}

// closeUpstreams stops the upstreams' health checks.
func closeUpstreams(r *serve.Router) {
	for _, up := range r.Upstreams() {
		up.Pool.Engine().Close()
	}
}
