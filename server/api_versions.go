package server

// ApiVersions (key 18), versions 0-4.
//
// v0 lists the supported versions; v1 adds throttle; v3 (KIP-511) makes
// the body flexible and adds the client's software name and version, which
// Kafka validates (INVALID_REQUEST, connection kept); v3+ also carries
// feature fields, which we leave empty. An unsupported version never gets
// here: conn.go answers it with KIP-511's v0 error body. The response
// header is always v0, even for flexible versions (protocol.AppendResponse).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// softwareNamePattern is Kafka's ApiVersionsRequest.isValid pattern for the
// client software name and version.
var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (s *Server) handleApiVersions(r *request, req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, v := range protocol.SupportedVersions() {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
	}
	if req.Version >= 3 && (!softwareNamePattern.MatchString(req.ClientSoftwareName) || !softwareNamePattern.MatchString(req.ClientSoftwareVersion)) {
		r.setCode(&resp.ErrorCode, kerr.InvalidRequest.Code)
	}
	return resp
}
