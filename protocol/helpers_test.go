package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// headerBytes encodes a request header by hand: key, version, correlation id,
// a nullable client id with an int16 length, then tags verbatim (nil for
// header v1, at least one count byte for header v2).
func headerBytes(key, version int16, corr int32, clientID *string, tags []byte) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, clientID)
	return append(b, tags...)
}

// sizePrefixed returns frame with its int32 big-endian size in front.
func sizePrefixed(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// formatted returns req as kmsg's client formatter writes it, without the
// size prefix: what ParseHeader receives from ReadFrame.
func formatted(req kmsg.Request, corr int32, clientID string) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	return f.AppendRequest(nil, req, corr)[4:]
}

// heartbeat returns a HeartbeatRequest at version with fixed field values.
func heartbeat(version int16, generation int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = version
	req.Group = "g"
	req.Generation = generation
	req.MemberID = "m-1"
	return req
}

// ptr returns a pointer to s.
func ptr(s string) *string { return &s }
