// Package systemd holds npud's systemd units: the hardened service unit
// that packages install and `npud install` writes, and the optional socket
// unit for socket activation.
package systemd

import _ "embed"

//go:embed npud.service
var serviceUnit string

//go:embed npud.socket
var socketUnit string

// ServiceUnit is npud.service. Its ExecStart names /usr/bin/npud, once, so
// an installer can put another path there.
func ServiceUnit() string { return serviceUnit }

// SocketUnit is npud.socket.
func SocketUnit() string { return socketUnit }
