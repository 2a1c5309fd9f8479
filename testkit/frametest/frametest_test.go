package frametest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeaderBytes(t *testing.T) {
	id := "ab"
	require.Equal(t, []byte{0, 12, 0, 1, 0, 0, 0, 7, 0, 2, 'a', 'b', 0}, HeaderBytes(12, 1, 7, &id, []byte{0}))
	require.Equal(t, []byte{0, 12, 0, 1, 0, 0, 0, 7, 0xff, 0xff}, HeaderBytes(12, 1, 7, nil, nil), "a null client id is length -1")
}

func TestSizePrefixed(t *testing.T) {
	require.Equal(t, []byte{0, 0, 0, 3, 'x', 'y', 'z'}, SizePrefixed([]byte("xyz")))
}

func TestFormatted(t *testing.T) {
	b := Formatted(Heartbeat(0, 5), 9, "c")
	want := append(HeaderBytes(12, 0, 9, ptr("c"), nil),
		0, 1, 'g', // group
		0, 0, 0, 5, // generation
		0, 3, 'm', '-', '1') // member id
	require.Equal(t, want, b)
}

func ptr(s string) *string { return &s }
