package server

// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server side
// of the four messages, as Kafka's ScramSaslServer runs them:
//
//	client-first  n,,n=user,r=cnonce
//	server-first  r=cnonce+snonce,s=salt,i=iterations
//	client-final  c=biws,r=cnonce+snonce,p=proof
//	server-final  v=signature
//
// Only the gs2 header "n" is accepted (no channel binding: Kafka's
// ScramMessages.ClientFirstMessage accepts no other), with an
// authorization id that is empty or the user's own. Every message is at
// most maxSCRAMMessageBytes; anything malformed, a nonce that does not end
// with the one the server made, a channel binding other than the header's, or a
// proof that does not match ends the exchange with an error, which the
// caller answers SASL_AUTHENTICATION_FAILED before it closes the
// connection.

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// scramIterations is the iteration count of the credentials made from
// the configured passwords: Kafka's minimum for SCRAM credentials.
const scramIterations = 4096

// maxSCRAMMessageBytes bounds a client's SCRAM message. Real ones are
// under 300 bytes: a user name, a nonce and a proof.
const maxSCRAMMessageBytes = 2048

// scramMech is one SCRAM hash.
type scramMech struct {
	name string
	hash func() hash.Hash
}

var (
	scramSHA256 = scramMech{name: "SCRAM-SHA-256", hash: sha256.New}
	scramSHA512 = scramMech{name: "SCRAM-SHA-512", hash: sha512.New}
)

// scramCredential is what the server keeps of a password for one
// mechanism (RFC 5802 section 3): never the password itself.
type scramCredential struct {
	salt       []byte
	iterations int
	storedKey  []byte // H(ClientKey)
	serverKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// newSCRAMCredential salts password with salt over iterations rounds of
// PBKDF2 and derives the stored and server keys.
func newSCRAMCredential(m scramMech, password string, salt []byte, iterations int) (scramCredential, error) {
	salted, err := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	if err != nil {
		return scramCredential{}, err
	}
	clientKey := scramHMAC(m, salted, "Client Key")
	h := m.hash()
	h.Write(clientKey)
	return scramCredential{salt: salt, iterations: iterations, storedKey: h.Sum(nil), serverKey: scramHMAC(m, salted, "Server Key")}, nil
}

func scramHMAC(m scramMech, key []byte, msg string) []byte {
	mac := hmac.New(m.hash, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}

// randomSalt returns a new 16-byte salt.
func randomSalt() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}

// scramNonce returns the server's part of the nonce: 24 random bytes,
// base64, so printable and without a comma.
func scramNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// errSCRAM marks a SCRAM message the exchange cannot go on from.
var errSCRAM = errors.New("scram")

// scramExchange is one connection's SCRAM exchange. Owned by the
// connection goroutine.
type scramExchange struct {
	mech   scramMech
	lookup func(user string) (scramCredential, bool)
	nonce  func() string // the server's nonce; scramNonce but in tests

	user            string
	cred            scramCredential
	gs2Header       string // "n,," or "n,a=user,"
	clientFirstBare string
	serverFirst     string
	nonceAll        string // the client's nonce and ours
	sentFirst       bool
}

// first answers the client-first message with the server-first one.
func (x *scramExchange) first(msg []byte) ([]byte, error) {
	if x.sentFirst {
		return nil, fmt.Errorf("%w: a second client-first message", errSCRAM)
	}
	if len(msg) > maxSCRAMMessageBytes {
		return nil, fmt.Errorf("%w: client-first message of %d bytes, more than %d", errSCRAM, len(msg), maxSCRAMMessageBytes)
	}
	s := string(msg)
	// gs2-header: gs2-cbind-flag "," [authzid] ","
	cbind, rest, ok := strings.Cut(s, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first message without a gs2 header", errSCRAM)
	}
	if cbind != "n" {
		return nil, fmt.Errorf("%w: channel binding flag %q, only \"n\" is supported", errSCRAM, cbind)
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first message without a gs2 header", errSCRAM)
	}
	attrs, err := scramAttrs(bare, "n", "r")
	if err != nil {
		return nil, err
	}
	user, err := scramUnescape(attrs[0])
	if err != nil {
		return nil, err
	}
	if user == "" || attrs[1] == "" || !scramPrintable(attrs[1]) {
		return nil, fmt.Errorf("%w: empty user or bad nonce", errSCRAM)
	}
	if authzid != "" {
		if z, err := scramUnescape(strings.TrimPrefix(authzid, "a=")); err != nil || !strings.HasPrefix(authzid, "a=") || z != user {
			return nil, fmt.Errorf("%w: authorization id %q differs from the user", errSCRAM, authzid)
		}
	}
	cred, ok := x.lookup(user)
	if !ok {
		// Kafka's ScramSaslServer fails at once for an unknown user.
		return nil, fmt.Errorf("%w: unknown user %q", errSCRAM, user)
	}
	x.user, x.cred = user, cred
	x.gs2Header = cbind + "," + authzid + ","
	x.clientFirstBare = bare
	x.nonceAll = attrs[1] + x.nonce()
	x.serverFirst = "r=" + x.nonceAll + ",s=" + base64.StdEncoding.EncodeToString(cred.salt) + ",i=" + strconv.Itoa(cred.iterations)
	x.sentFirst = true
	return []byte(x.serverFirst), nil
}

// final checks the client-final message and answers the server-final
// one. Any error means the client did not prove it knows the password.
func (x *scramExchange) final(msg []byte) ([]byte, error) {
	if !x.sentFirst {
		return nil, fmt.Errorf("%w: client-final message before client-first", errSCRAM)
	}
	if len(msg) > maxSCRAMMessageBytes {
		return nil, fmt.Errorf("%w: client-final message of %d bytes, more than %d", errSCRAM, len(msg), maxSCRAMMessageBytes)
	}
	s := string(msg)
	withoutProof, proofAttr, ok := cutLast(s, ",p=")
	if !ok {
		return nil, fmt.Errorf("%w: client-final message without a proof", errSCRAM)
	}
	attrs, err := scramAttrs(withoutProof, "c", "r")
	if err != nil {
		return nil, err
	}
	if binding, err := base64.StdEncoding.DecodeString(attrs[0]); err != nil || string(binding) != x.gs2Header {
		return nil, fmt.Errorf("%w: channel binding %q is not the gs2 header's", errSCRAM, attrs[0])
	}
	// Kafka's ScramSaslServer checks that the nonce ends with the one it
	// sent, not that it equals it: librdkafka 2.0 (kcat 1.7.1) sends its
	// own nonce again in front. The proof covers the nonce as sent.
	if !strings.HasSuffix(attrs[1], x.nonceAll) {
		return nil, fmt.Errorf("%w: invalid nonce in the client-final message", errSCRAM)
	}
	proof, err := base64.StdEncoding.DecodeString(proofAttr)
	if err != nil || len(proof) != len(x.cred.storedKey) {
		return nil, fmt.Errorf("%w: malformed proof", errSCRAM)
	}
	authMessage := x.clientFirstBare + "," + x.serverFirst + "," + withoutProof
	signature := scramHMAC(x.mech, x.cred.storedKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ signature[i]
	}
	h := x.mech.hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), x.cred.storedKey) != 1 {
		return nil, fmt.Errorf("%w: invalid proof for user %q", errSCRAM, x.user)
	}
	serverSignature := scramHMAC(x.mech, x.cred.serverKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil
}

// scramAttrs splits msg into its leading attributes, which must be
// names in order; extensions after them are ignored (RFC 5802 allows
// them, Kafka reads tokenauth from there).
func scramAttrs(msg string, names ...string) ([]string, error) {
	parts := strings.Split(msg, ",")
	if len(parts) < len(names) {
		return nil, fmt.Errorf("%w: %d attributes, want %d", errSCRAM, len(parts), len(names))
	}
	values := make([]string, len(names))
	for i, name := range names {
		v, ok := strings.CutPrefix(parts[i], name+"=")
		if !ok {
			return nil, fmt.Errorf("%w: attribute %d is not %q", errSCRAM, i, name)
		}
		values[i] = v
	}
	return values, nil
}

// scramUnescape decodes a saslname: "=2C" is ',' and "=3D" is '=', and no
// other '=' may appear.
func scramUnescape(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in name %q", errSCRAM, s)
		}
		i += 2
	}
	return b.String(), nil
}

// scramPrintable reports whether a nonce holds only RFC 5802's printable
// characters: 0x21-0x7e but ','.
func scramPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
