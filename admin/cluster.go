package admin

// GET /v1/cluster: which broker this API belongs to, as DescribeCluster
// says it on the Kafka side: the cluster id and the broker with the host
// and port its Metadata advertises, and its clock. A tool given a Kafka
// address and an admin address (the partition lab) compares the two
// before it changes anything, so that it never puts a fault on another
// broker than the one it was pointed at.

import (
	"net"
	"net/http"
	"strconv"

	"github.com/minibroker/minibroker/server"
)

// clusterJSON answers GET /v1/cluster.
type clusterJSON struct {
	ClusterID string       `json:"cluster_id"`
	Brokers   []brokerJSON `json:"brokers"`
	Clock     string       `json:"clock"` // "manual" or "real"
}

// brokerJSON is one broker as Metadata and DescribeCluster list it.
type brokerJSON struct {
	NodeID int32  `json:"node_id"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
}

func (s *Server) handleCluster(w http.ResponseWriter, _ *http.Request) {
	out := clusterJSON{ClusterID: server.ClusterID, Brokers: []brokerJSON{}, Clock: s.clockKind()}
	if s.advertised != nil {
		if host, port, err := net.SplitHostPort(s.advertised()); err == nil {
			if n, err := strconv.ParseInt(port, 10, 32); err == nil {
				out.Brokers = append(out.Brokers, brokerJSON{NodeID: server.NodeID, Host: host, Port: int32(n)})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}
