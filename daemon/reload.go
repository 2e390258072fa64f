package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"syscall"
)

// reloadable lists the Config fields a reload applies to the running
// server. Everything else (the listener, the engine, queue sizes) is read
// once at start; a change to it is reported as needing a restart.
var reloadable = map[string]bool{
	"APIKeys": true, "APIKeyFile": true, "PublicPaths": true, "AllowedHosts": true, "CORSOrigins": true,
	"RateLimit": true, "RateBurst": true, "MaxStreams": true, "BodyReadTimeout": true,
	"MaxBodyBytes": true, "LogLevel": true,
}

// Reload applies next's reloadable settings: API keys (the key file is read
// again), Host and CORS lists, rate limits and stream caps, body limits and
// the log level. It logs what changed, and what changed but needs a
// restart. On error nothing changes.
func (s *Server) Reload(next Config) error {
	pol, err := newPolicy(next, s.ln.Addr().String())
	if err != nil {
		return fmt.Errorf("reloading: %w", err)
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	applied, restart := []string{}, []string{}
	running := reflect.ValueOf(&s.running).Elem()
	for _, name := range changedFields(s.running, next) {
		if reloadable[name] {
			applied = append(applied, name)
			running.FieldByName(name).Set(reflect.ValueOf(next).FieldByName(name))
		} else {
			restart = append(restart, name)
		}
	}
	s.policy.Store(pol)
	s.limits.configure(next.RateLimit, next.RateBurst, next.MaxStreams)
	if s.logLevel != nil {
		s.logLevel.Set(next.LogLevel)
	}
	s.log.Info("configuration reloaded", "changed", applied, "api_keys", len(pol.keys.keys))
	if len(restart) > 0 {
		s.log.Warn("configuration changes that need a restart were not applied", "fields", restart)
	}
	return nil
}

// changedFields names the Config fields (embedded structs flattened) whose
// values differ.
func changedFields(a, b Config) []string {
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
// each SIGHUP until ctx ends; a configuration that does not validate is
// logged and ignored, and the running one stays.
func (s *Server) reloadOnHangup(ctx context.Context, args []string, getenv func(string) string) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
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
