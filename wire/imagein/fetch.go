package imagein

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// FetchTimeout bounds fetching one image URL.
const FetchTimeout = 15 * time.Second

// errNotPublic is why a connection was refused; clients only ever see
// errFetch.
var errNotPublic = errors.New("imagein: the address is not public")

// NewFetchClient returns the client image URLs are fetched with: it
// connects only to public unicast addresses, or to addresses in allow
// (the operator's --image-url-allow, for cameras on a private network),
// checked on the address actually dialled, after DNS resolution, so a
// name that resolves (or re-resolves) to a private address is refused; it
// follows no redirect, uses no proxy from the environment, and gives up
// after FetchTimeout.
func NewFetchClient(allow []netip.Prefix) *http.Client {
	dialer := &net.Dialer{
		Timeout: FetchTimeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", errNotPublic, address)
			}
			if !Fetchable(ap.Addr(), allow) {
				return fmt.Errorf("%w: %s", errNotPublic, ap.Addr())
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: FetchTimeout,
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would be the address dialled, not the image's
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   FetchTimeout,
			ResponseHeaderTimeout: FetchTimeout,
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Fetchable reports whether npud may connect to addr for an image: a
// public unicast address, or one inside allow. Loopback, private (RFC 1918,
// unique local), link-local (the cloud metadata address 169.254.169.254
// among them), CGNAT, unspecified, multicast and broadcast addresses are
// refused unless allowed; IPv4-mapped IPv6 addresses are judged as IPv4.
func Fetchable(addr netip.Addr, allow []netip.Prefix) bool {
	addr = addr.Unmap()
	for _, p := range allow {
		if p.Contains(addr) {
			return true
		}
	}
	switch {
	case !addr.IsValid(), addr.IsUnspecified(), addr.IsLoopback(), addr.IsPrivate(),
		addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast(),
		addr.IsMulticast(), !addr.IsGlobalUnicast():
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// nonPublic are ranges Go's predicates do not call private but that are
// not the public internet either.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),         // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),     // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),      // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),     // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),       // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),      // NAT64: embeds any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),    // local NAT64
	netip.MustParsePrefix("2002::/16"),         // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("2001::/32"),         // Teredo: embeds any IPv4 address
	netip.MustParsePrefix("fec0::/10"),         // site-local (deprecated)
	netip.MustParsePrefix("100::/64"),          // discard
	netip.MustParsePrefix("2001:db8::/32"),     // documentation
	netip.MustParsePrefix("fd00:ec2::254/128"), // EC2's IPv6 metadata (also unique local)
}
