package server

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestDescribeCluster: this node as the only broker and the controller,
// Metadata's cluster id and address, at every version over a socket.
func TestDescribeCluster(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	c := wiretest.Dial(t, addr, "dc")
	md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, nil))
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		resp := wiretest.Do[*kmsg.DescribeClusterResponse](t, c, req)
		require.Equal(t, int16(0), resp.ErrorCode)
		require.Equal(t, *md.ClusterID, resp.ClusterID)
		require.Equal(t, "minibroker", resp.ClusterID)
		require.Equal(t, NodeID, resp.ControllerID)
		require.Equal(t, []kmsg.DescribeClusterResponseBroker{{NodeID: 0, Host: md.Brokers[0].Host, Port: md.Brokers[0].Port}}, resp.Brokers)
		require.Equal(t, int32(math.MinInt32), resp.ClusterAuthorizedOperations, "not requested")
		if v >= 1 {
			require.Equal(t, int8(1), resp.EndpointType)
		}
	}
}

// TestDescribeClusterAuthorizedOperations: requested, they are the
// operations a Kafka cluster resource supports, as Kafka answers
// without an authorizer: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
func TestDescribeClusterAuthorizedOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp := call[*kmsg.DescribeClusterResponse](e, "c", req)
	require.Equal(t, int32(8096), resp.ClusterAuthorizedOperations)
	var ops []string
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite} {
		if resp.ClusterAuthorizedOperations&(1<<op) != 0 {
			ops = append(ops, op.String())
		}
	}
	require.Equal(t, []string{"CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}, ops)
}

// TestDescribeClusterControllers: a broker answers endpoint type 2
// (controllers), or any but 1, UNSUPPORTED_ENDPOINT_TYPE.
func TestDescribeClusterControllers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, typ := range []int8{2, 0, 9} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = 1, typ
		resp := call[*kmsg.DescribeClusterResponse](e, "c", req)
		require.Equal(t, kerr.UnsupportedEndpointType.Code, resp.ErrorCode)
		require.Empty(t, resp.Brokers)
		require.NotNil(t, resp.ErrorMessage)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 0, 2 // v0 has no endpoint type: ignored
	require.Equal(t, int16(0), call[*kmsg.DescribeClusterResponse](e, "c", req).ErrorCode)
}
