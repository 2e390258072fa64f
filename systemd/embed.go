// Package systemd holds npud's systemd units, embedded in the binary: the
// hardened service unit that the packages install and `npud service install`
// writes, and the optional socket unit for socket activation.
//
// The service is Type=notify with a watchdog, so the daemon must send
// READY=1, STOPPING=1 and WATCHDOG=1 (sd_notify), and it must accept the
// listener that npud.socket passes (LISTEN_FDS).
package systemd

import _ "embed"

var (
	//go:embed npud.service
	serviceUnit string

	//go:embed npud.socket
	socketUnit string
)

// ExecPath is the executable that ServiceUnit's ExecStart names. It occurs
// exactly once in the unit, so an installer can replace it with the path of
// the executable it installs.
const ExecPath = "/usr/bin/npud"

// ServiceUnit returns the text of npud.service.
func ServiceUnit() string { return serviceUnit }

// SocketUnit returns the text of npud.socket.
func SocketUnit() string { return socketUnit }
