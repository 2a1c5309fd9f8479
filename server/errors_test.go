package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/topics"
	"github.com/minibroker/minibroker/wireclient"
)

// sentinels is every exported Err* variable of the packages whose errors
// reach the server, by qualified name. TestErrorCodesCoverEverySentinel
// fails when a package declares one that is not listed here, so a new
// sentinel cannot ship without a decision about its code.
var sentinels = map[string]error{
	"coordinator.ErrUnknownMemberID":           coordinator.ErrUnknownMemberID,
	"coordinator.ErrIllegalGeneration":         coordinator.ErrIllegalGeneration,
	"coordinator.ErrRebalanceInProgress":       coordinator.ErrRebalanceInProgress,
	"coordinator.ErrNotPartitionOwner":         coordinator.ErrNotPartitionOwner,
	"coordinator.ErrInvalidGroupID":            coordinator.ErrInvalidGroupID,
	"coordinator.ErrInvalidMemberID":           coordinator.ErrInvalidMemberID,
	"coordinator.ErrInvalidClientID":           coordinator.ErrInvalidClientID,
	"coordinator.ErrGroupMaxSizeReached":       coordinator.ErrGroupMaxSizeReached,
	"coordinator.ErrMemberMetadataTooLarge":    coordinator.ErrMemberMetadataTooLarge,
	"coordinator.ErrTooManyGroups":             coordinator.ErrTooManyGroups,
	"coordinator.ErrInvalidSessionTimeout":     coordinator.ErrInvalidSessionTimeout,
	"coordinator.ErrInconsistentGroupProtocol": coordinator.ErrInconsistentGroupProtocol,
	"coordinator.ErrMemberIDRequired":          coordinator.ErrMemberIDRequired,
	"coordinator.ErrUnknownTopic":              coordinator.ErrUnknownTopic,
	"coordinator.ErrGroupIDNotFound":           coordinator.ErrGroupIDNotFound,
	"coordinator.ErrUnknownGroup":              coordinator.ErrUnknownGroup,
	"coordinator.ErrFencedMemberEpoch":         coordinator.ErrFencedMemberEpoch,
	"coordinator.ErrStaleMemberEpoch":          coordinator.ErrStaleMemberEpoch,
	"coordinator.ErrUnsupportedAssignor":       coordinator.ErrUnsupportedAssignor,
	"coordinator.ErrUnsupportedVersion":        coordinator.ErrUnsupportedVersion,
	"coordinator.ErrFencedInstanceID":          coordinator.ErrFencedInstanceID,
	"coordinator.ErrUnreleasedInstanceID":      coordinator.ErrUnreleasedInstanceID,
	"coordinator.ErrInvalidRegularExpression":  coordinator.ErrInvalidRegularExpression,
	"coordinator.ErrNonEmptyGroup":             coordinator.ErrNonEmptyGroup,
	"coordinator.ErrGroupSubscribedToTopic":    coordinator.ErrGroupSubscribedToTopic,
	"catalog.ErrInvalidTopic":                  catalog.ErrInvalidTopic,
	"catalog.ErrTopicExists":                   catalog.ErrTopicExists,
	"catalog.ErrUnknownTopic":                  catalog.ErrUnknownTopic,
	"catalog.ErrInvalidPartitions":             catalog.ErrInvalidPartitions,
	"catalog.ErrStorage":                       catalog.ErrStorage,
	"catalog.ErrInvalidConfigs":                catalog.ErrInvalidConfigs,
	"topics.ErrInvalidConfig":                  topics.ErrInvalidConfig,
	"offsets.ErrNegativeOffset":                offsets.ErrNegativeOffset,
	"offsets.ErrInvalidEntry":                  offsets.ErrInvalidEntry,
	"offsets.ErrMetadataTooLarge":              offsets.ErrMetadataTooLarge,
	"offsets.ErrStorage":                       offsets.ErrStorage,
	"offsets.ErrClosed":                        offsets.ErrClosed,
	"offsets.ErrCorrupt":                       offsets.ErrCorrupt,
	"protocol.ErrFrameTooLarge":                protocol.ErrFrameTooLarge,
	"protocol.ErrMalformedHeader":              protocol.ErrMalformedHeader,
	"protocol.ErrMalformedRequest":             protocol.ErrMalformedRequest,
	"protocol.ErrUnknownAPIKey":                protocol.ErrUnknownAPIKey,
	"protocol.ErrUnsupportedVersion":           protocol.ErrUnsupportedVersion,
	"wireclient.ErrCorrelationMismatch":        wireclient.ErrCorrelationMismatch,
}

// closeSentinels are the documented exceptions: protocol errors that mean
// "close the connection" (docs/design.md section 4, Kafka's SocketServer), so
// they never become a code. TestCloseSentinelsCloseTheConnection shows
// conn.go closing on each; ErrCorrelationMismatch is the raw client's own
// error about a response and never reaches the server.
var closeSentinels = []string{
	"protocol.ErrFrameTooLarge",
	"protocol.ErrMalformedHeader",
	"protocol.ErrMalformedRequest",
	"protocol.ErrUnknownAPIKey",
	"protocol.ErrUnsupportedVersion",
	"wireclient.ErrCorrelationMismatch",
}

// declaredSentinels parses the non-test sources of the packages and returns
// the qualified names of their exported package-level Err* variables.
func declaredSentinels(t *testing.T, pkgs ...string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, pkg := range pkgs {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "no sources for package %s", pkg)
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						if ast.IsExported(name.Name) && strings.HasPrefix(name.Name, "Err") {
							out = append(out, f.Name.Name+"."+name.Name)
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestErrorCodesCoverEverySentinel(t *testing.T) {
	t.Parallel()
	declared := declaredSentinels(t, "coordinator", "offsets", "protocol", "catalog", "topics", "wireclient")
	for _, name := range declared {
		if _, ok := sentinels[name]; !ok {
			t.Errorf("%s is a new sentinel: give it a code in errorCodes (errors.go) and list it in sentinels", name)
		}
	}
	for name := range sentinels {
		assert.Contains(t, declared, name, "sentinels lists %s, which no longer exists", name)
	}
	s := newEnv(t).srv
	for _, name := range declared {
		err, ok := sentinels[name]
		if !ok || slices.Contains(closeSentinels, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			code := s.code(err)
			assert.NotEqual(t, kerr.UnknownServerError.Code, code, "%s has no code", name)
			assert.NotZero(t, code, "%s maps to NONE", name)
			assert.Equal(t, code, s.code(fmt.Errorf("context: %w", err)), "a wrapped %s must map the same", name)
		})
	}
}

func TestErrorCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want *kerr.Error
	}{
		{coordinator.ErrNotPartitionOwner, kerr.RebalanceInProgress}, // 27: docs/design.md section 4
		{coordinator.ErrIllegalGeneration, kerr.IllegalGeneration},   // 22
		{coordinator.ErrUnknownMemberID, kerr.UnknownMemberID},       // 25
		{offsets.ErrNegativeOffset, kerr.OffsetOutOfRange},           // 1
		{offsets.ErrStorage, kerr.KafkaStorageError},                 // 56
		{coordinator.ErrRebalanceInProgress, kerr.RebalanceInProgress},
		{coordinator.ErrInvalidGroupID, kerr.InvalidGroupID},
		{coordinator.ErrInvalidMemberID, kerr.InvalidRequest},
		{coordinator.ErrInvalidClientID, kerr.InvalidRequest},
		{coordinator.ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached}, // 81
		{coordinator.ErrTooManyGroups, kerr.PolicyViolation},           // 44: docs/reliability.md
		{coordinator.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
		{coordinator.ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
		{coordinator.ErrMemberIDRequired, kerr.MemberIDRequired},
		{coordinator.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
		{coordinator.ErrGroupIDNotFound, kerr.GroupIDNotFound},                   // 69
		{coordinator.ErrUnknownGroup, kerr.GroupIDNotFound},                      // 69
		{coordinator.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},               // 110
		{coordinator.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},                 // 113
		{coordinator.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},           // 112
		{coordinator.ErrUnsupportedVersion, kerr.UnsupportedVersion},             // 35
		{coordinator.ErrFencedInstanceID, kerr.FencedInstanceID},                 // 82
		{coordinator.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},         // 111
		{coordinator.ErrInvalidRegularExpression, kerr.InvalidRegularExpression}, // 128
		{catalog.ErrInvalidTopic, kerr.InvalidTopicException},
		{catalog.ErrTopicExists, kerr.TopicAlreadyExists},
		{catalog.ErrInvalidPartitions, kerr.InvalidPartitions},
		{catalog.ErrStorage, kerr.KafkaStorageError},
		{offsets.ErrMetadataTooLarge, kerr.OffsetMetadataTooLarge},
		{offsets.ErrInvalidEntry, kerr.InvalidRequest},
		{offsets.ErrClosed, kerr.CoordinatorNotAvailable},
		{offsets.ErrCorrupt, kerr.KafkaStorageError},
		{fmt.Errorf("commit: %w", offsets.ErrNegativeOffset), kerr.OffsetOutOfRange},
		{fmt.Errorf("commit: %w", offsets.ErrStorage), kerr.KafkaStorageError},
		// A kerr error (a handler's own request-level rejection) keeps its code.
		{fmt.Errorf("%w: replication factor 3", kerr.InvalidReplicationFactor), kerr.InvalidReplicationFactor},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			assert.Equal(t, tc.want.Code, e.srv.code(tc.err))
			assert.Empty(t, e.logs.AtLevel(slog.LevelError), "a mapped error is not our failure")
		})
	}
}

func TestErrorCodeNilAndUnmatched(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	assert.Equal(t, int16(0), e.srv.code(nil))
	assert.Empty(t, e.logs.AtLevel(slog.LevelDebug))

	assert.Equal(t, kerr.UnknownServerError.Code, e.srv.code(errors.New("boom")))
	logged := e.logs.Find("unmapped error")
	require.Len(t, logged, 1)
	assert.Equal(t, slog.LevelError, logged[0].Level)
	assert.Equal(t, "boom", logged[0].Attrs["err"])
}

// TestCloseSentinelsCloseTheConnection shows where each documented
// exception goes instead of errors.go: the input that produces it makes
// conn.go close the connection without an answer, and a second connection
// is unaffected.
func TestCloseSentinelsCloseTheConnection(t *testing.T) {
	t.Parallel()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.Generation, hb.MemberID = 3, "g", 1, "m"
	validHB := rawRequest(hb, 1, "c")
	truncated := validHB[:len(validHB)-3]
	truncated[3] -= 3 // the size prefix covers the cut frame exactly

	tests := []struct {
		name string
		err  error
		raw  []byte
	}{
		// Over Kafka's 100 MiB: closed unread (a frame up to it is skimmed: oversize.go).
		{"protocol.ErrFrameTooLarge", protocol.ErrFrameTooLarge, binary.BigEndian.AppendUint32(nil, maxSkimFrameBytes+1)},
		{"protocol.ErrMalformedHeader", protocol.ErrMalformedHeader, []byte{0, 0, 0, 3, 0, 12, 0}},
		{"protocol.ErrMalformedRequest", protocol.ErrMalformedRequest, truncated},
		{"protocol.ErrUnknownAPIKey", protocol.ErrUnknownAPIKey, rawHeader(9999, 0, 1, nil)},
		{"protocol.ErrUnsupportedVersion", protocol.ErrUnsupportedVersion, rawHeader(12, 99, 1, nil)},
	}
	var covered []string
	for _, tc := range tests {
		covered = append(covered, tc.name)
	}
	assert.ElementsMatch(t, closeSentinels, append(covered, "wireclient.ErrCorrelationMismatch"),
		"every close sentinel but the client-only ErrCorrelationMismatch has a case")

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.srv.maxFrame = 1 << 20

			// The input produces exactly this sentinel on the server's path.
			frame, err := protocol.ReadFrame(strings.NewReader(string(tc.raw)), e.srv.maxFrame, nil)
			if err == nil {
				_, _, err = e.srv.handleFrame(&request{ctx: t.Context(), logger: e.srv.logger, peer: &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1"}}, frame)
			}
			require.ErrorIs(t, err, tc.err)

			addr := e.serve()
			bystander := wiretest.Dial(t, addr, "bystander")
			wiretest.Do[*kmsg.ApiVersionsResponse](t, bystander, apiVersionsRequest(3))
			c := wiretest.Dial(t, addr, "hostile")
			require.NoError(t, c.Send(tc.raw))
			wiretest.RequireClosed(t, c)
			resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, bystander, apiVersionsRequest(3))
			assert.Zero(t, resp.ErrorCode)

			eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing connection")) == 1 },
				"the close is logged")
			logged := e.logs.Find("closing connection")[0]
			assert.Equal(t, slog.LevelWarn, logged.Level, "a misbehaving peer is a Warn")
			assert.Contains(t, logged.Attrs, "remote")
		})
	}
}
