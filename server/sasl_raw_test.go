package server

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// handshakeV0 sends a SaslHandshake v0 for mechanism and requires NONE.
func handshakeV0(t *testing.T, c *wireclient.Client, mechanism string) {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 0, mechanism
	resp := wiretest.Do[*kmsg.SASLHandshakeResponse](t, c, req)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, resp.SupportedMechanisms)
}

// rawToken sends token as a bare length-prefixed frame and returns the
// bare frame that answers it.
func rawToken(t *testing.T, c *wireclient.Client, token []byte) []byte {
	t.Helper()
	require.NoError(t, c.Send(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...)))
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Time{}))
	return frame
}

// TestSASLHandshakeV0RawTokens: after a v0 handshake the client sends
// bare tokens (KIP-152's predecessor): PLAIN is answered with an empty
// token, SCRAM with its messages, and the connection is then served; a
// failed token closes it unanswered, logged as any failure is.
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	t.Parallel()
	e, addr := newSASLEnv(t, nil)
	c := wiretest.Dial(t, addr, "v0-plain")
	handshakeV0(t, c, MechanismPlain)
	require.Empty(t, rawToken(t, c, plainToken("alice", "alice-secret")))
	require.Len(t, wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil)).Topics, 2)

	c = wiretest.Dial(t, addr, "v0-scram")
	handshakeV0(t, c, MechanismSCRAMSHA256)
	session, first, err := scram.Auth{User: "bob", Pass: "b:o:b"}.AsSha256Mechanism().Authenticate(context.Background(), addr)
	require.NoError(t, err)
	_, final, err := session.Challenge(rawToken(t, c, first))
	require.NoError(t, err)
	done, _, err := session.Challenge(rawToken(t, c, final))
	require.NoError(t, err)
	require.True(t, done, "the server signature verifies")
	require.Len(t, wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil)).Topics, 2)

	c = wiretest.Dial(t, addr, "v0-wrong")
	handshakeV0(t, c, MechanismPlain)
	token := plainToken("alice", "wrong")
	require.NoError(t, c.Send(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...)))
	wiretest.RequireClosed(t, c)
	recs := e.logs.Find("sasl authentication failed, closing connection")
	require.Len(t, recs, 1)
	require.Equal(t, "alice", recs[0].Attrs["user"])
	require.Equal(t, c.LocalAddr(), recs[0].Attrs["remote"])

	// A bare token is bounded like any frame before authentication.
	c = wiretest.Dial(t, addr, "v0-big")
	handshakeV0(t, c, MechanismSCRAMSHA512)
	require.NoError(t, c.Send(binary.BigEndian.AppendUint32(nil, maxUnauthenticatedFrameBytes+1)))
	wiretest.RequireClosed(t, c)
}
