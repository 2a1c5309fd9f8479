package lab

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/assignor"
)

// CodeName returns the Kafka name of an error code: "NONE" for 0,
// "ILLEGAL_GENERATION" for 22, "UNKNOWN_ERROR_CODE_<n>" for a code kerr
// does not know.
func CodeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Code == code {
		return e.Message
	}
	return "UNKNOWN_ERROR_CODE_" + strconv.Itoa(int(code))
}

// Partitions renders partitions the way the chapter prints an assignment:
// "orders-0, orders-2", or "(none)".
func Partitions(parts []assignor.TopicPartition) string {
	if len(parts) == 0 {
		return "(none)"
	}
	names := make([]string, len(parts))
	for i, tp := range parts {
		names[i] = tp.String()
	}
	return strings.Join(names, ", ")
}

// compact renders partitions for a wire line: "orders-0,orders-2".
func compact(parts []assignor.TopicPartition) string {
	if len(parts) == 0 {
		return "(none)"
	}
	names := make([]string, len(parts))
	for i, tp := range parts {
		names[i] = tp.String()
	}
	return strings.Join(names, ",")
}

// list renders names for a wire line: "a,b", or "(none)".
func list(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ",")
}

// quoteID renders a member id, showing the empty id as "".
func quoteID(id string) string {
	if id == "" {
		return `""`
	}
	return id
}

// offsetList renders offsets for a wire line: "orders-0=10 orders-1=-1".
func offsetList(offs []PartitionOffset) string {
	if len(offs) == 0 {
		return "(none)"
	}
	parts := make([]string, len(offs))
	for i, po := range offs {
		parts[i] = fmt.Sprintf("%s=%d", po.TopicPartition, po.Offset)
	}
	return strings.Join(parts, " ")
}

// TP names one partition.
func TP(topic string, partition int32) assignor.TopicPartition {
	return assignor.TopicPartition{Topic: topic, Partition: partition}
}
