package server

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errDuplicateTopic answers each topic a CreateTopics, CreatePartitions
// or DeleteTopics request names more than once: INVALID_REQUEST, with
// Kafka's message (ControllerApis.createTopics, createPartitions and
// deleteTopics: "Duplicate topic name."), which every such topic of an
// answer shares (sharedMessage): a request of many repeated names holds
// one message, not one each.
var errDuplicateTopic = fmt.Errorf("%w: duplicate topic name", kerr.InvalidRequest)

// duplicateTopicMessage is the message of errDuplicateTopic's topics.
const duplicateTopicMessage = "Duplicate topic name."

// sharedMessage returns the error message of an answer's element for
// err: for errDuplicateTopic the one *shared holds (made at its first
// use), else err's own.
func sharedMessage(err error, shared **string) *string {
	if err != errDuplicateTopic {
		msg := err.Error()
		return &msg
	}
	if *shared == nil {
		msg := duplicateTopicMessage
		*shared = &msg
	}
	return *shared
}
