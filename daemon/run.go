package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
)

// Version is the npud version; release builds set it with -ldflags.
var Version = "0.1.0-dev"

// Run is `npud serve`: the configuration from args, the environment and
// its file, then the server until ctx ends, then the drain. It returns the
// process exit code (2: a bad configuration, 1: the server could not start
// or stopped with an error).
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := ParseServe(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "npud serve: %v\n", err)
		return 2
	}
	level := new(slog.LevelVar)
	level.Set(cfg.LogLevel)
	log := newLogger(cfg, level, stderr)
	opts := []Option{WithLogLevel(level)}
	// Under systemd socket activation (npud.socket) the listener is
	// inherited, and --listen is not used.
	if lns, err := activation.Listeners(); err != nil {
		log.Error("cannot use the socket-activated listeners", "err", err)
		return 1
	} else if len(lns) > 0 {
		if lns[0] == nil {
			log.Error("the first socket systemd passed is not a stream listener (npud.socket needs ListenStream=)")
			return 1
		}
		log.Info("serving on the socket systemd passed", "addr", lns[0].Addr().String(), "sockets", len(lns))
		for _, extra := range lns[1:] {
			if extra != nil {
				_ = extra.Close() // one listener is served; npud.socket declares one
			}
		}
		opts = append(opts, WithListener(lns[0]))
	}
	// New takes no context yet: its start-up (the listener, the engine
	// workers' device probe) cannot be cut short by a signal. Giving it
	// one changes every caller's signature (issue 28).
	srv, err := New(cfg, log, opts...) //nolint:contextcheck // see above
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	// SIGHUP stays handled until the process exits: once the drain began,
	// its default action (termination) would cut the streams the drain is
	// finishing.
	hupDone := make(chan struct{})
	defer close(hupDone)
	go srv.reloadOnHangup(ctx, hupDone, args, getenv)
	// A client or journald going away must not kill the daemon: writes to
	// them fail with EPIPE instead, as they do on sockets.
	signal.Ignore(syscall.SIGPIPE)
	if err := srv.Serve(ctx); err != nil {
		log.Error("stopped with an error", "err", err)
		return 1
	}
	return 0
}

func newLogger(cfg Config, level slog.Leveler, w io.Writer) *slog.Logger {
	return NewLogger(cfg.LogFormat, level, w)
}

// NewLogger is npud's logger for a --log-format ("text" or "json"):
// durations readable in text, in milliseconds in JSON.
func NewLogger(format string, level slog.Leveler, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: durationsInMilliseconds}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: readableDurations}))
}

// readableDurations writes durations for people: "412.3ms", "3.21s",
// "2m5s", rounded to what a person reads.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, readableDuration(a.Value.Duration()))
	}
	return a
}

func readableDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return d.Round(100 * time.Nanosecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// durationsInMilliseconds writes durations for machines: "ttft_ms": 412.3
// (slog's JSON would give integer nanoseconds under the bare key).
func durationsInMilliseconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"_ms", float64(a.Value.Duration())/float64(time.Millisecond))
	}
	return a
}
