package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
)

// notifier speaks systemd's notify protocol for a Type=notify unit: READY
// once the listener is up and preloaded models are loaded, STOPPING when
// the drain begins, and WATCHDOG pings while serving. Without
// NOTIFY_SOCKET (not under systemd) every call does nothing.
type notifier struct{ log *slog.Logger }

func (n notifier) send(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		n.log.Warn("cannot notify systemd", "state", state, "err", err)
	}
}

// preloadExtension is how much more start time each extension asks for;
// one is sent at the start and then every half of it.
const preloadExtension = time.Minute

// extendWhile asks systemd for d more start-up time now and every d/2
// until the returned stop is called, so a long model compile does not hit
// TimeoutStartSec.
func (n notifier) extendWhile(ctx context.Context, d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	msg := fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", d.Microseconds())
	go func() {
		defer close(done)
		t := time.NewTicker(d / 2)
		defer t.Stop()
		for {
			n.send(msg)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// watchdog pings at half the interval systemd asked for (WATCHDOG_USEC)
// until ctx ends. A daemon wedged badly enough to stop this goroutine's
// timer gets restarted by systemd.
func (n notifier) watchdog(ctx context.Context) {
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return
	}
	n.log.Info("systemd watchdog on", "interval", interval)
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n.send(sd.SdNotifyWatchdog)
		}
	}
}
