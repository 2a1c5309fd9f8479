package server

// DescribeCluster (key 60), versions 0-2 (KIP-700).
//
// The answer is this node as the only broker and as the controller, with
// Metadata's cluster id and advertised address and no rack. v1 adds the
// endpoint type: a broker answers only type 1 (brokers), anything else
// UNSUPPORTED_ENDPOINT_TYPE, as Kafka's KafkaApis does. v2 adds fenced
// brokers, of which this node is never one. The cluster's authorized
// operations are Kafka's "not requested" value, math.MinInt32, unless the
// request asks for them; then they are every operation a cluster
// supports, as Kafka answers without an authorizer.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterOperations is Kafka's bitfield (1 << AclOperation code) of the
// operations a cluster resource supports (AclEntry.supportedOperations):
// CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
// ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
const clusterOperations int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12

// endpointTypeBroker is DescribeCluster's endpoint type of brokers.
const endpointTypeBroker int8 = 1

func (s *Server) handleDescribeCluster(r *request, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBroker
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.Version >= 1 && req.EndpointType != endpointTypeBroker {
		msg := "The request was sent to an endpoint of type BROKER, but it asked for another endpoint type"
		r.setCode(&resp.ErrorCode, kerr.UnsupportedEndpointType.Code)
		resp.ErrorMessage = &msg
		return resp
	}
	host, port := s.address()
	resp.ClusterID = ClusterID
	resp.ControllerID = NodeID
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: NodeID, Host: host, Port: port}}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterOperations
	}
	return resp
}
