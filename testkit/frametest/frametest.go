// Package frametest builds Kafka request frames by hand, for the tests of
// the codec (protocol/) and of the raw client (wireclient/): headers with
// any client id and tags, size prefixes, and requests as kmsg's client
// formatter writes them. It stands on kbin and kmsg alone, so that the
// codec's own tests can use it.
package frametest

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HeaderBytes encodes a request header by hand: key, version, correlation
// id, a nullable client id with an int16 length, then tags verbatim (nil
// for header v1, at least one count byte for header v2).
func HeaderBytes(key, version int16, corr int32, clientID *string, tags []byte) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, clientID)
	return append(b, tags...)
}

// SizePrefixed returns frame with its int32 big-endian size in front.
func SizePrefixed(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// Formatted returns req as kmsg's client formatter writes it, without the
// size prefix: what a server's frame reader hands to its header parser.
func Formatted(req kmsg.Request, corr int32, clientID string) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	return f.AppendRequest(nil, req, corr)[4:]
}

// Heartbeat returns a HeartbeatRequest at version with fixed field values:
// group "g", member "m-1", the given generation.
func Heartbeat(version int16, generation int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = version
	req.Group = "g"
	req.Generation = generation
	req.MemberID = "m-1"
	return req
}
