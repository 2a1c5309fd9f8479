// Package settings holds what every package's Settings shares: the error
// a Validate returns for one setting. (The one HOST:PORT rule is
// internal/hostport's, apart, so that the packages below the wire never
// link net.)
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

import "fmt"

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
