// Package protocol owns minibroker's Kafka framing: reading length-prefixed
// frames under a size cap, decoding request headers (API key, version,
// correlation id, client id, tagged fields), turning a header and body into a
// kmsg.Request, encoding responses with the right response header, and the
// one table of API versions we support, the Skimmer of a frame too large
// to hold (its header and a Produce's topics and partitions decoded, the
// rest read past unkept), and the ConsumerMemberAssignment
// codec (EncodeAssignment, DecodeAssignment) that the server, the labs and
// the tests share. It dials nothing: the raw client is wireclient/.
//
// It knows kmsg (and kbin, kerr) and nothing of groups, members or offsets:
// of this module it imports only assignor, for the TopicPartition an
// assignment lists. It must not import net, coordinator, offsets or server;
// the server decides what a request means, this package only says what it is.
//
// Errors are typed so that the server can choose between answering and
// closing, as Kafka's SocketServer does (see docs/design.md section 4):
//
//   - a *FrameSizeError (ErrFrameTooLarge): close, no response;
//   - ErrUnknownAPIKey, ErrMalformedHeader, ErrMalformedRequest: close;
//   - an *UnsupportedVersionError (ErrUnsupportedVersion): close, except for
//     ApiVersions (key 18), which is answered with
//     UnsupportedAPIVersionsResponse (KIP-511) on a v0 response header.
//
// The package has no mutable package-level state and takes no locks. A Client
// is owned by one goroutine at a time.
package protocol
