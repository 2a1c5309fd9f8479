// Package hostport is the one rule for the addresses minibroker is given
// (listen, advertise, admin): HOST:PORT.
package hostport

import (
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/internal/settings"
)

// Errors of Split.
var (
	ErrNotHostPort = errors.New("must be HOST:PORT")
	ErrPort        = errors.New("the port must be a number from 0 to 65535")
)

// Split splits addr into its host and port: the one rule for the
// addresses minibroker is given (listen, advertise, admin). The host may
// be empty (every interface); the port is a number from 0 to 65535. It
// returns ErrNotHostPort or ErrPort.
func Split(addr string) (host string, port uint16, err error) {
	host, text, err := net.SplitHostPort(addr)
	if err != nil || text == "" {
		return "", 0, ErrNotHostPort
	}
	n, err := strconv.ParseUint(text, 10, 16)
	if err != nil {
		return "", 0, ErrPort
	}
	return host, uint16(n), nil
}

// Check returns nil for an empty addr or a valid HOST:PORT, and
// otherwise field's Error in scope, as Split decides.
func Check(scope, field, addr string) error {
	if addr == "" {
		return nil
	}
	switch _, _, err := Split(addr); {
	case errors.Is(err, ErrNotHostPort):
		return settings.Errorf(scope, field, "must be HOST:PORT, got %q", addr)
	case err != nil:
		return settings.Errorf(scope, field, "%q: %v", addr, err)
	}
	return nil
}

// IsLoopbackHost reports whether host, a name or an address without a
// port, can only mean this machine: "localhost" (and names under
// .localhost), or a loopback address.
func IsLoopbackHost(host string) bool {
	host = strings.ToLower(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Loopback is the host a client on this machine dials for a listener
// bound to every interface.
const Loopback = "127.0.0.1"

// Reachable returns the address a client on this machine dials to reach
// a listener bound to bound (a net.Listener's Addr): bound itself, or,
// for one bound to every interface (0.0.0.0, ::), Loopback with its port
// and true. Go binds a "tcp" listener on every interface to both IPv4
// and IPv6, so Loopback reaches it either way. A bound that is not
// HOST:PORT is returned as it is.
func Reachable(bound string) (addr string, allInterfaces bool) {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound, false
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return bound, false
	}
	return net.JoinHostPort(Loopback, port), true
}
