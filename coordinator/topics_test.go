package coordinator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCreateTopic(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.NoError(t, f.c.CreateTopic("invoices", 3))
	require.Equal(t, map[string]int32{"orders": 4, "payments": 1, "invoices": 3}, f.c.Topics())

	require.ErrorIs(t, f.c.CreateTopic("invoices", 3), ErrTopicExists)
	require.ErrorIs(t, f.c.CreateTopic("empty", 0), ErrInvalidPartitions)
	require.ErrorIs(t, f.c.CreateTopic("bad name", 1), ErrInvalidTopic)

	res := f.join("g", "a", "invoices")
	require.Equal(t, []string{"invoices-0", "invoices-1", "invoices-2"}, names(res.Assignment))
}

func TestValidTopicName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"orders": true, "a.b_c-D9": true, strings.Repeat("x", 249): true,
		"": false, ".": false, "..": false, strings.Repeat("x", 250): false,
		"with space": false, "slash/": false, "uml\u00e4ut": false,
	} {
		require.Equal(t, want, ValidTopicName(name), "%q", name)
	}
}
