package server

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// rfc7677 is RFC 7677 section 3's SCRAM-SHA-256 example: user "user",
// password "pencil".
var rfc7677 = struct {
	salt, clientNonce, serverNonce string
	clientFirst, serverFirst       string
	clientFinal, serverFinal       string
	iterations                     int
}{
	salt:        "W22ZaJ0SNY7soEsUEjb6gQ==",
	clientNonce: "rOprNGfwEbeRWgbNEkqO",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
	iterations:  4096,
}

// rfc7677Exchange is a server exchange holding the RFC's credential for
// "user" and answering with the RFC's server nonce.
func rfc7677Exchange(t *testing.T) *scramExchange {
	t.Helper()
	salt, err := base64.StdEncoding.DecodeString(rfc7677.salt)
	require.NoError(t, err)
	cred, err := newSCRAMCredential(scramSHA256, "pencil", salt, rfc7677.iterations)
	require.NoError(t, err)
	return &scramExchange{
		mech:   scramSHA256,
		lookup: lookupIn(map[string]scramCredential{"user": cred}),
		nonce:  func() string { return rfc7677.serverNonce },
	}
}

// TestSCRAMRFC7677: the server side of RFC 7677's example produces the
// RFC's server-first and server-final messages, byte for byte.
func TestSCRAMRFC7677(t *testing.T) {
	t.Parallel()
	x := rfc7677Exchange(t)
	first, err := x.first([]byte(rfc7677.clientFirst))
	require.NoError(t, err)
	require.Equal(t, rfc7677.serverFirst, string(first))
	final, err := x.final([]byte(rfc7677.clientFinal))
	require.NoError(t, err)
	require.Equal(t, rfc7677.serverFinal, string(final))
	require.Equal(t, "user", x.user)
}

// TestSCRAMWithFranzGoClient: franz-go's SCRAM client, an implementation
// of its own, authenticates against both hashes, and fails with a wrong
// password at the proof.
func TestSCRAMWithFranzGoClient(t *testing.T) {
	t.Parallel()
	users, err := newSASLUsers(map[string]string{"alice": "alice-secret", "a,b=c": "p"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, user, pass string
		mech             scramMech
		creds            map[string]scramCredential
		ok               bool
	}{
		{"sha256", "alice", "alice-secret", scramSHA256, users.scram256, true},
		{"sha512", "alice", "alice-secret", scramSHA512, users.scram512, true},
		{"escaped name", "a,b=c", "p", scramSHA512, users.scram512, true},
		{"sha256 wrong password", "alice", "wrong", scramSHA256, users.scram256, false},
		{"sha512 wrong password", "alice", "wrong", scramSHA512, users.scram512, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			auth := scram.Auth{User: tc.user, Pass: tc.pass}
			mech := auth.AsSha256Mechanism()
			if tc.mech.name == MechanismSCRAMSHA512 {
				mech = auth.AsSha512Mechanism()
			}
			session, clientFirst, err := mech.Authenticate(context.Background(), "broker.test:9092")
			require.NoError(t, err)
			x := &scramExchange{mech: tc.mech, lookup: lookupIn(tc.creds), nonce: scramNonce}
			serverFirst, err := x.first(clientFirst)
			require.NoError(t, err)
			require.Equal(t, tc.user, x.user)
			done, clientFinal, err := session.Challenge(serverFirst)
			require.NoError(t, err)
			require.False(t, done)
			serverFinal, err := x.final(clientFinal)
			if !tc.ok {
				require.ErrorIs(t, err, errSCRAM)
				require.ErrorContains(t, err, "invalid proof")
				return
			}
			require.NoError(t, err)
			done, _, err = session.Challenge(serverFinal)
			require.NoError(t, err, "the client verifies the server's signature")
			require.True(t, done)
		})
	}
}

// TestSCRAMBadClientFirst: every malformed or refused client-first
// message ends the exchange with an error naming what is wrong.
func TestSCRAMBadClientFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, msg, want string }{
		{"empty", "", "without a gs2 header"},
		{"no bare part", "n,", "without a gs2 header"},
		{"channel binding required", "p=tls-unique,,n=user,r=abc", "channel binding flag"},
		{"client supports binding", "y,,n=user,r=abc", "channel binding flag"},
		{"other authzid", "n,a=admin,n=user,r=abc", "authorization id"},
		{"authzid without a=", "n,user,n=user,r=abc", "authorization id"},
		{"no nonce", "n,,n=user", "attributes"},
		{"attributes swapped", "n,,r=abc,n=user", "is not \"n\""},
		{"empty nonce", "n,,n=user,r=", "bad nonce"},
		{"nonce with a space", "n,,n=user,r=a b", "bad nonce"},
		{"empty user", "n,,n=,r=abc", "empty user"},
		{"bad escape", "n,,n=us=er,r=abc", "bad escape"},
		{"unknown user", "n,,n=mallory,r=abc", "unknown user"},
		{"huge", "n,,n=user,r=" + strings.Repeat("x", maxSCRAMMessageBytes), "more than 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := rfc7677Exchange(t)
			_, err := x.first([]byte(tc.msg))
			require.ErrorIs(t, err, errSCRAM)
			require.ErrorContains(t, err, tc.want)
			require.False(t, x.sentFirst)
		})
	}
}

// TestSCRAMBadClientFinal: after the RFC's first messages, every wrong
// client-final message is refused: nonce, channel binding, proof.
func TestSCRAMBadClientFinal(t *testing.T) {
	t.Parallel()
	nonce := rfc7677.clientNonce + rfc7677.serverNonce
	proof := "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	for _, tc := range []struct{ name, msg, want string }{
		{"no proof", "c=biws,r=" + nonce, "without a proof"},
		{"client nonce only", "c=biws,r=" + rfc7677.clientNonce + "," + proof, "invalid nonce"},
		{"other server nonce", "c=biws,r=" + rfc7677.clientNonce + "xyz," + proof, "invalid nonce"},
		{"binding of y", "c=" + base64.StdEncoding.EncodeToString([]byte("y,,")) + ",r=" + nonce + "," + proof, "channel binding"},
		{"binding not base64", "c=!!,r=" + nonce + "," + proof, "channel binding"},
		{"proof not base64", "c=biws,r=" + nonce + ",p=!!", "malformed proof"},
		{"short proof", "c=biws,r=" + nonce + ",p=AAAA", "malformed proof"},
		{"wrong proof", "c=biws,r=" + nonce + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32)), "invalid proof"},
		{"huge", "c=biws,r=" + nonce + strings.Repeat("x", maxSCRAMMessageBytes) + "," + proof, "more than 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := rfc7677Exchange(t)
			_, err := x.first([]byte(rfc7677.clientFirst))
			require.NoError(t, err)
			_, err = x.final([]byte(tc.msg))
			require.ErrorIs(t, err, errSCRAM)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestSCRAMOutOfOrder: a final before a first, or a second first, is
// refused.
func TestSCRAMOutOfOrder(t *testing.T) {
	t.Parallel()
	x := rfc7677Exchange(t)
	_, err := x.final([]byte(rfc7677.clientFinal))
	require.ErrorContains(t, err, "before client-first")
	_, err = x.first([]byte(rfc7677.clientFirst))
	require.NoError(t, err)
	_, err = x.first([]byte(rfc7677.clientFirst))
	require.ErrorContains(t, err, "a second client-first")
}

// TestSCRAMUnescape: a saslname's "=2C" and "=3D".
func TestSCRAMUnescape(t *testing.T) {
	t.Parallel()
	got, err := scramUnescape("a=2Cb=3Dc")
	require.NoError(t, err)
	require.Equal(t, "a,b=c", got)
	_, err = scramUnescape("a=2")
	require.ErrorContains(t, err, "bad escape")
}

// FuzzSCRAMExchange feeds both client messages: no input panics, and
// only the RFC's own messages authenticate.
func FuzzSCRAMExchange(f *testing.F) {
	f.Add([]byte(rfc7677.clientFirst), []byte(rfc7677.clientFinal))
	f.Add([]byte("n,a=user,n=user,r=x"), []byte("c=biws,r=x,p="))
	f.Add([]byte("n,,n=us=2Cer,r=abc,ext=1"), []byte("c=bixx,r=abc,p=AAAA"))
	f.Add([]byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		x := rfc7677Exchange(t)
		if _, err := x.first(first); err != nil {
			return
		}
		if _, err := x.final(final); err == nil && (string(first) != rfc7677.clientFirst || string(final) != rfc7677.clientFinal) {
			t.Fatalf("authenticated with %q then %q", first, final)
		}
	})
}

// BenchmarkSCRAMSHA512Exchange times one whole SCRAM-SHA-512 exchange,
// franz-go's client side (which salts the password: 4096 PBKDF2 rounds)
// and ours (two HMACs and a hash per message).
func BenchmarkSCRAMSHA512Exchange(b *testing.B) {
	users, err := newSASLUsers(map[string]string{"alice": "alice-secret"})
	require.NoError(b, err)
	auth := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()
	for b.Loop() {
		session, clientFirst, _ := auth.Authenticate(context.Background(), "broker.test:9092")
		x := &scramExchange{mech: scramSHA512, lookup: lookupIn(users.scram512), nonce: scramNonce}
		serverFirst, err := x.first(clientFirst)
		if err != nil {
			b.Fatal(err)
		}
		_, clientFinal, _ := session.Challenge(serverFirst)
		if _, err := x.final(clientFinal); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewSASLUsers times deriving one user's credentials at start:
// 4096 PBKDF2 rounds for each SCRAM hash.
func BenchmarkNewSASLUsers(b *testing.B) {
	for b.Loop() {
		if _, err := newSASLUsers(map[string]string{"alice": "alice-secret"}); err != nil {
			b.Fatal(err)
		}
	}
}
