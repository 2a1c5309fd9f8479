// Package settings holds what every package's Settings shares: the error
// a Validate returns for one setting, and the one HOST:PORT rule.
//
// A package with user settings (server, coordinator, records, txn)
// declares them in one struct, Settings, apart from the dependencies its
// Config also holds. Each field is documented with its unit, its default
// and the Kafka setting it mirrors, zero means the default, and its
// struct tags name the `minibroker serve` flag and its help:
//
//	MaxFetchWait time.Duration `flag:"max-fetch-wait" help:"longest a Fetch waits for records, whatever it asks for"`
//
// broker.Config embeds every Settings, and the command binds its flags
// to the tagged fields (cmd/minibroker/flagbind.go).
package settings

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Error is an invalid value of one setting. Field is the Go field's name;
// Problem says what is wrong, and may name other fields of the same
// struct. The command renders both with flag names instead.
type Error struct {
	Scope   string // the package, as errors of that package begin
	Field   string
	Problem string
}

func (e *Error) Error() string { return e.Scope + ": " + e.Field + " " + e.Problem }

// Errorf returns the Error of field in scope, its problem formatted.
func Errorf(scope, field, format string, args ...any) *Error {
	return &Error{Scope: scope, Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Errors of SplitHostPort.
var (
	ErrNotHostPort = errors.New("must be HOST:PORT")
	ErrPort        = errors.New("the port must be a number from 0 to 65535")
)

// SplitHostPort splits addr into its host and port: the one rule for the
// addresses minibroker is given (listen, advertise, admin). The host may
// be empty (every interface); the port is a number from 0 to 65535. It
// returns ErrNotHostPort or ErrPort.
func SplitHostPort(addr string) (host string, port uint16, err error) {
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

// CheckHostPort returns nil for an empty addr or a valid HOST:PORT, and
// otherwise field's Error in scope, as SplitHostPort decides.
func CheckHostPort(scope, field, addr string) error {
	if addr == "" {
		return nil
	}
	switch _, _, err := SplitHostPort(addr); {
	case errors.Is(err, ErrNotHostPort):
		return Errorf(scope, field, "must be HOST:PORT, got %q", addr)
	case err != nil:
		return Errorf(scope, field, "%q: %v", addr, err)
	}
	return nil
}
