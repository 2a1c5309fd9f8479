package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrMalformedHeader is returned when a request header is truncated: the
// fixed fields, the client id or (header v2) the tagged fields. Kafka's
// RequestHeader.parse throws InvalidRequestException and closes.
var ErrMalformedHeader = errors.New("protocol: malformed request header")

// ErrUnknownAPIKey is returned for an API key that kmsg does not know.
// Kafka's RequestHeader.parse rejects it ("Unknown API key") and closes.
var ErrUnknownAPIKey = errors.New("protocol: unknown API key")

// ErrUnsupportedVersion matches every *UnsupportedVersionError: a known API
// key at a version outside our table, or an API we do not implement at all.
var ErrUnsupportedVersion = errors.New("protocol: unsupported API version")

// ErrMalformedRequest is returned when a request body is truncated for its
// API and version. Kafka's RequestContext.parseRequest closes the connection.
var ErrMalformedRequest = errors.New("protocol: malformed request body")

// UnsupportedVersionError reports a request for an API we do not implement at
// the given version. errors.Is(err, ErrUnsupportedVersion) is true for it.
//
// When Key is 18 (ApiVersions) the server must not close: it answers with
// UnsupportedAPIVersionsResponse on a v0 response header (KIP-511), as
// Kafka's ApiKeys.isVersionEnabled special case does. Any other key closes.
type UnsupportedVersionError struct {
	Key     int16
	Version int16
}

// Error names the API, the version asked for and the range we support.
func (e *UnsupportedVersionError) Error() string {
	r, ok := VersionsFor(e.Key)
	if !ok {
		return fmt.Sprintf("protocol: %s (key %d) v%d: API not supported",
			kmsg.NameForKey(e.Key), e.Key, e.Version)
	}
	return fmt.Sprintf("protocol: %s (key %d) v%d: supported versions are %d-%d",
		kmsg.NameForKey(e.Key), e.Key, e.Version, r.Min, r.Max)
}

// Is makes errors.Is(err, ErrUnsupportedVersion) true.
func (e *UnsupportedVersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

// RequestHeader is the part of a request header common to header v1 and v2
// (RequestHeader.json). Header v2 adds tagged fields, which DecodeRequest
// skips because only the API version says whether they are there.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id.
	ClientID *string
}

// ParseHeader reads the request header at the start of frame (the bytes after
// the size prefix) and returns it with the rest of the frame.
//
// The client id is a nullable string with an int16 length in every header
// version: RequestHeader.json marks it "flexibleVersions": "none" so that any
// broker can read any ApiVersions header. A negative length means null, as in
// Kafka's generated reader. The rest still starts with header v2's tagged
// fields when the API version is flexible.
func ParseHeader(frame []byte) (RequestHeader, []byte, error) {
	return ParseHeaderReusing(frame, nil)
}

// ParseHeaderReusing is ParseHeader for a connection that keeps the client
// id of its last request: when the header names the same one, ClientID is
// last itself and nothing is allocated for it. Nobody may change *last.
func ParseHeaderReusing(frame []byte, last *string) (RequestHeader, []byte, error) {
	r := kbin.Reader{Src: frame}
	h := RequestHeader{
		APIKey:        r.Int16(),
		APIVersion:    r.Int16(),
		CorrelationID: r.Int32(),
	}
	if !r.Ok() {
		return RequestHeader{}, nil, fmt.Errorf("%w: %d bytes, need at least 10", ErrMalformedHeader, len(frame))
	}
	if last != nil && sameClientID(r.Src, *last) {
		h.ClientID = last
		r.Src = r.Src[2+len(*last):]
	} else {
		h.ClientID = r.NullableString()
	}
	if !r.Ok() {
		return RequestHeader{}, nil, fmt.Errorf("%w: client id truncated", ErrMalformedHeader)
	}
	return h, r.Src, nil
}

// sameClientID reports whether src starts with the client id id, a
// non-null string: its int16 length and its bytes.
func sameClientID(src []byte, id string) bool {
	return len(id) <= math.MaxInt16 && len(src) >= 2+len(id) &&
		int(binary.BigEndian.Uint16(src)) == len(id) && string(src[2:2+len(id)]) == id
}

// DecodeRequest turns a parsed header and the rest of its frame into a
// kmsg.Request with its version set.
//
// The checks follow Kafka's order: unknown key (ErrUnknownAPIKey), then
// version outside our table (*UnsupportedVersionError; the body is not read,
// as Kafka's isUnsupportedApiVersionsRequest does not read it), then header
// v2 tagged fields (ErrMalformedHeader), then the body (ErrMalformedRequest).
// Trailing bytes after the body are ignored, as kmsg and Kafka ignore them.
func DecodeRequest(h RequestHeader, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.APIKey)
	if req == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownAPIKey, h.APIKey)
	}
	if !Supported(h.APIKey, h.APIVersion) {
		return nil, &UnsupportedVersionError{Key: h.APIKey, Version: h.APIVersion}
	}
	req.SetVersion(h.APIVersion)
	if req.IsFlexible() {
		r := kbin.Reader{Src: body}
		skipTags(&r)
		if !r.Ok() {
			return nil, fmt.Errorf("%w: tagged fields truncated", ErrMalformedHeader)
		}
		body = r.Src
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", ErrMalformedRequest,
			kmsg.NameForKey(h.APIKey), h.APIVersion, err)
	}
	return req, nil
}

// skipTags reads past a tagged field section, as kmsg.SkipTags does. That
// takes an interface, through which r escapes: a flexible request's
// header would cost an allocation.
func skipTags(r *kbin.Reader) {
	for num := r.Uvarint(); num > 0 && r.Ok(); num-- {
		_, size := r.Uvarint(), r.Uvarint()
		r.Span(int(size))
	}
}

// UnsupportedAPIVersionsResponse returns the KIP-511 answer to an ApiVersions
// request at a version we do not support: a v0 body with UNSUPPORTED_VERSION
// and only our ApiVersions range, so the client retries at our max on the same
// connection (Kafka's ApiVersionsRequest.getErrorResponse). Send it with
// AppendResponse, which uses response header v0 for key 18.
func UnsupportedAPIVersionsResponse() *kmsg.ApiVersionsResponse {
	vr, _ := VersionsFor(int16(kmsg.ApiVersions)) // always in the table
	key := kmsg.NewApiVersionsResponseApiKey()
	key.ApiKey, key.MinVersion, key.MaxVersion = vr.Key, vr.Min, vr.Max

	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{key}
	return resp
}
