package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"unicode"
)

// Reload applies next's Reloadable settings (Config.Security.Reloadable):
// API keys (the key file is read again), Host and CORS lists, rate limits
// and stream caps, body limits and the log level, as one value. Everything
// else (the listener, the engine, queue sizes) is read once at start: a
// change to it is logged as needing a restart. On error nothing changes.
func (s *Server) Reload(next Config) error {
	pol, err := newPolicy(next, s.ln.Addr().String())
	if err != nil {
		return fmt.Errorf("reloading: %w", err)
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old := s.policy.Load()
	// Fail closed: a reload must not switch authentication off by leaving
	// no key (a key file emptied or cut short, a key list removed) unless
	// that is asked for in so many words.
	if old.keys.enabled() && !pol.keys.enabled() && !next.NoAuth {
		return fmt.Errorf("reloading: the new configuration has no API key while %d are in use; "+
			"set no-auth to serve without keys", len(old.keys.keys))
	}
	added, removed := keyChanges(old.keys, pol.keys)
	applied := configKeys(changedFields(s.running.Reloadable, next.Reloadable))
	prev, fixed := s.running, next
	prev.Reloadable, fixed.Reloadable = Reloadable{}, Reloadable{}
	restart := configKeys(changedFields(prev, fixed))
	s.running.Reloadable = next.Reloadable
	if (added > 0 || removed > 0) && !slices.Contains(applied, "api-key") {
		applied = append(applied, "api-key-file") // the file's keys changed, not its path
	}
	s.policy.Store(pol)
	// A revoked key's open WebSockets close now (1008): its holder may no
	// longer start anything, and must not keep a channel that can.
	if revoked := revokedKeys(old.keys, pol.keys); len(revoked) > 0 {
		s.wsConns.CloseKeys(revoked)
		s.keyRequests.revoke(revoked) // and its HTTP streams end with key_revoked
	}
	s.router.SetLimits(tenantLimits(next))
	s.authFailures.configure(next.AuthFailureLimit)
	if s.logLevel != nil {
		s.logLevel.Set(next.LogLevel)
	}
	s.log.Info("configuration reloaded", "changed", applied, "api_keys", len(pol.keys.keys),
		"api_keys_added", added, "api_keys_removed", removed)
	if len(restart) > 0 {
		s.log.Warn("configuration changes that need a restart were not applied", "keys", restart)
	}
	return nil
}

// keyChanges counts the keys (by name and secret) that next has and prev
// has not, and the other way round; the log says how many, never which
// secrets.
func keyChanges(prev, next keyring) (added, removed int) {
	held := func(r keyring) map[string]bool {
		m := map[string]bool{}
		for _, k := range r.keys {
			m[k.Name+"\x00"+string(k.digest[:])] = true
		}
		return m
	}
	p, n := held(prev), held(next)
	for k := range n {
		if !p[k] {
			added++
		}
	}
	for k := range p {
		if !n[k] {
			removed++
		}
	}
	return added, removed
}

// configFieldKeys names the Config fields whose configuration key (the flag
// and TOML name) is not their name in kebab case.
var configFieldKeys = map[string]string{
	"APIKeys": "api-key", "MaxStreams": "max-streams-per-key", "Aliases": "alias",
	"NPUMaxPromptLen": "npu-max-prompt-len", "NPUMinResponseLen": "npu-min-response-len",
	"NPUPrefillHint": "npu-prefill-hint", "NPUGenerateHint": "npu-generate-hint",
	"NPUPrefillChunk": "npu-prefill-chunk", "NPUPrefixCaching": "npu-prefix-caching",
	"NPUOperatorSet": "npu-* (which are set)",
	"CORSOrigins":    "cors-origins", "TLSCert": "tls-cert", "TLSKey": "tls-key",
	"WSMaxRequests": "ws-max-requests", "WSMaxMessages": "ws-max-messages", "SimTTFT": "sim-ttft", "SimITL": "sim-itl",
	"APIKeyFile": "api-key-file", "ConfigFile": "config", "OpenVINOLib": "openvino-lib",
	"AllowImageURLs": "allow-image-urls", "Upstreams": "upstream", "ImageURLAllow": "image-url-allow",
}

// configKey turns a Config field name into its configuration key, the name
// operators know (max-streams-per-key, not MaxStreams).
func configKey(field string) string {
	if k, ok := configFieldKeys[field]; ok {
		return k
	}
	var b strings.Builder
	for i, r := range field {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// configKeys turns Config field names into configuration keys.
func configKeys(fields []string) []string {
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		out = append(out, configKey(f))
	}
	return out
}

// changedFields names the Config fields (embedded structs flattened) whose
// values differ.
func changedFields[T any](a, b T) []string {
	var out []string
	var walk func(x, y reflect.Value)
	walk = func(x, y reflect.Value) {
		for i := range x.NumField() {
			f := x.Type().Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(x.Field(i), y.Field(i))
				continue
			}
			if !reflect.DeepEqual(x.Field(i).Interface(), y.Field(i).Interface()) {
				out = append(out, f.Name)
			}
		}
	}
	walk(reflect.ValueOf(a), reflect.ValueOf(b))
	return out
}

// reloadOnHangup re-reads the configuration (file, environment, args) on
// each SIGHUP until serving ends (ctx); a configuration that does not
// validate is logged and ignored, and the running one stays. During the
// drain it keeps SIGHUP from its default action, terminating the process,
// until done closes.
func (s *Server) reloadOnHangup(ctx context.Context, done <-chan struct{}, args []string, getenv func(string) string) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-done:
			return
		case <-hup:
		}
		if ctx.Err() != nil {
			s.log.Warn("SIGHUP during the drain: ignored")
			continue
		}
		next, err := ParseServe(args, getenv, io.Discard)
		if err == nil {
			err = s.Reload(next)
		}
		if err != nil {
			s.log.Error("SIGHUP: configuration not reloaded; the running one stays", "err", err)
		}
	}
}
