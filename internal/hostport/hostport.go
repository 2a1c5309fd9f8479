// Package hostport is the one rule for the addresses minibroker is given
// (listen, advertise, admin): HOST:PORT.
package hostport

import (
	"errors"
	"net"
	"strconv"

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
