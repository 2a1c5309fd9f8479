package server

// IncrementalAlterConfigs (key 44), versions 0-1, and AlterConfigs (key
// 33), versions 0-2.
//
// IncrementalAlterConfigs changes the named topic configs: SET gives one
// a value, DELETE takes it back to the broker's default (deleting one the
// topic does not set, or an unknown name, changes nothing, as Kafka);
// APPEND and SUBTRACT are for list configs, which minibroker has none
// of, so they are INVALID_CONFIG ("Can't APPEND to key ... because its
// type is not LIST.", Kafka's controller). AlterConfigs replaces the
// topic's whole set: what it does not name goes back to the default.
// Both check the topic's resulting set as Kafka's LogConfig does (an
// unknown name or a bad value is INVALID_CONFIG with Kafka's message),
// then that the topic exists (UNKNOWN_TOPIC_OR_PARTITION), and only then
// save it (topics/: the catalog's journal, then the partition
// logs, at once). ValidateOnly checks and changes nothing.
//
// As Kafka's ConfigAdminManager.preprocess: a resource named twice in a
// request is INVALID_REQUEST for each, a config named twice in a
// resource INVALID_REQUEST, a null value (other than DELETE's)
// INVALID_REQUEST, an unknown operation INVALID_REQUEST. A broker
// resource must name this node or be "" (INVALID_REQUEST otherwise);
// every broker setting is read-only here, so any change to one is
// INVALID_REQUEST "Cannot update these configs dynamically", as Kafka
// answers a static broker config; an empty change is NONE. Other
// resource types are INVALID_REQUEST.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/topics"
)

// alterAnswerBytes bounds one resource's answer beside its name.
const alterAnswerBytes = 256

// alterChange is one config of a resource to alter, for either API.
type alterChange struct {
	name  string
	value *string
	op    kmsg.IncrementalAlterConfigOp
}

// alterResource is one resource of either API.
type alterResource struct {
	typ     kmsg.ConfigResourceType
	name    string
	changes []alterChange
}

func (s *Server) handleIncrementalAlterConfigs(r *request, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	res := make([]alterResource, len(req.Resources))
	for i, rr := range req.Resources {
		res[i] = alterResource{typ: rr.ResourceType, name: rr.ResourceName}
		for _, c := range rr.Configs {
			res[i].changes = append(res[i].changes, alterChange{name: c.Name, value: c.Value, op: c.Op})
		}
	}
	if !r.reserve(alterEstimate(res)) {
		return resp
	}
	for i, err := range s.alterConfigs(res, true, req.ValidateOnly) {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res[i].typ, res[i].name
		if err != nil {
			r.setCode(&rr.ErrorCode, s.code(err))
			rr.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (s *Server) handleAlterConfigs(r *request, req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	res := make([]alterResource, len(req.Resources))
	for i, rr := range req.Resources {
		res[i] = alterResource{typ: rr.ResourceType, name: rr.ResourceName}
		for _, c := range rr.Configs {
			res[i].changes = append(res[i].changes, alterChange{name: c.Name, value: c.Value, op: kmsg.IncrementalAlterConfigOpSet})
		}
	}
	if !r.reserve(alterEstimate(res)) {
		return resp
	}
	for i, err := range s.alterConfigs(res, false, req.ValidateOnly) {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res[i].typ, res[i].name
		if err != nil {
			r.setCode(&rr.ErrorCode, s.code(err))
			rr.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// alterEstimate bounds the answer to res.
func alterEstimate(res []alterResource) int64 {
	var n int64
	for _, r := range res {
		n += alterAnswerBytes + int64(len(r.name))
	}
	return n
}

// alterConfigs alters each resource in turn and returns its error:
// incremental for IncrementalAlterConfigs, else AlterConfigs' whole set.
func (s *Server) alterConfigs(res []alterResource, incremental, validateOnly bool) []error {
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	count := map[key]int{}
	for _, r := range res {
		count[key{r.typ, r.name}]++
	}
	errs := make([]error, len(res))
	for i, r := range res {
		if count[key{r.typ, r.name}] > 1 {
			errs[i] = fmt.Errorf("%w: Each resource must appear at most once", kerr.InvalidRequest)
			continue
		}
		errs[i] = s.alterResource(r, incremental, validateOnly)
	}
	return errs
}

// alterResource alters one resource.
func (s *Server) alterResource(r alterResource, incremental, validateOnly bool) error {
	seen := make(map[string]bool, len(r.changes))
	var null []string
	for _, c := range r.changes {
		if seen[c.name] {
			return fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
		}
		seen[c.name] = true
		if c.value == nil && c.op != kmsg.IncrementalAlterConfigOpDelete {
			null = append(null, c.name)
		}
		if c.op > kmsg.IncrementalAlterConfigOpSubtract {
			return fmt.Errorf("%w: Unknown operations type %d", kerr.InvalidRequest, c.op)
		}
	}
	if len(null) > 0 {
		return fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, listNames(null))
	}
	switch r.typ {
	case kmsg.ConfigResourceTypeBroker:
		return alterBroker(r)
	case kmsg.ConfigResourceTypeTopic:
		return s.alterTopic(r, incremental, validateOnly)
	}
	return fmt.Errorf("%w: Unsupported resource type %d", kerr.InvalidRequest, r.typ)
}

// alterBroker answers a change to the broker's settings, all read-only.
func alterBroker(r alterResource) error {
	if r.name != "" {
		id, err := strconv.Atoi(r.name)
		if err != nil {
			return fmt.Errorf("%w: Node id must be an integer, but it is: %s", kerr.InvalidRequest, r.name)
		}
		if id != int(NodeID) {
			return fmt.Errorf("%w: Unexpected broker id, expected %d, but received %s", kerr.InvalidRequest, NodeID, r.name)
		}
	}
	if len(r.changes) == 0 {
		return nil
	}
	names := make([]string, 0, len(r.changes))
	for _, c := range r.changes {
		names = append(names, c.name)
	}
	slices.Sort(names)
	return fmt.Errorf("%w: Cannot update these configs dynamically: [%s]", kerr.InvalidRequest, listNames(names))
}

// alterTopic computes a topic's new set of configs, checks it, and saves
// it unless validateOnly.
func (s *Server) alterTopic(r alterResource, incremental, validateOnly bool) error {
	if r.name == "" {
		return fmt.Errorf("%w: Default topic resources are not allowed", kerr.InvalidRequest)
	}
	if err := s.checkTopicName(r.name); err != nil {
		return err
	}
	current, exists := s.catalog.Lookup(r.name)
	next := map[string]string{}
	if incremental {
		next = maps.Clone(current.Configs)
		if next == nil {
			next = map[string]string{}
		}
	}
	for _, c := range r.changes {
		switch c.op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[c.name] = *c.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, c.name)
		default: // APPEND, SUBTRACT: no topic config here is a list
			op := "APPEND"
			if c.op == kmsg.IncrementalAlterConfigOpSubtract {
				op = "SUBTRACT"
			}
			return fmt.Errorf("%w: Can't %s to key %s because its type is not LIST", kerr.InvalidConfig, op, c.name)
		}
	}
	if _, _, err := topics.Resolve(s.log.Defaults(), next); err != nil {
		return err
	}
	if !exists {
		return unknownTopic(r.name)
	}
	_, err := s.topics.SetConfigs(r.name, next, validateOnly)
	return err
}

// listNames joins names for a message, the first ten of them.
func listNames(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}
