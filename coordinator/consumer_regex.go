package coordinator

// Regex subscriptions (KIP-848's SubscribedTopicRegex). Kafka compiles the
// pattern with RE2/J and subscribes the member to every topic whose whole
// name it matches, resolving the pattern asynchronously as topics come and
// go (GroupMetadataManager.maybeUpdateRegularExpressions). Here the
// pattern is Go's regexp (RE2 syntax, as Kafka's) and it is resolved
// against the catalog at every heartbeat of the group's members: a topic
// created since that the pattern matches is a subscription change, so
// the group epoch moves and the target assignment takes the topic in
// (ReasonSubscription), in the heartbeat that notices it.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// compileRegex compiles a subscription pattern to match whole topic names,
// as Kafka's Pattern.matcher(topic).matches() does. An invalid pattern is
// ErrInvalidRegularExpression.
func compileRegex(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidRegularExpression, pattern, err)
	}
	return re, nil
}

// setRegex applies the regex a heartbeat carries: nil keeps the member's,
// "" removes it (an empty regex subscribes to nothing, as in Kafka), any
// other pattern replaces it. It reports whether the pattern changed; the
// pattern was checked by checkConsumerHeartbeat. Called with mu held.
func (m *member) setRegex(pattern *string) bool {
	if pattern == nil || *pattern == m.regex {
		return false
	}
	m.regex, m.re, m.matched = *pattern, nil, nil
	if m.regex != "" {
		m.re, _ = compileRegex(m.regex)
	}
	return true
}

// rematch resolves every regex of g's members against the catalog and
// reports whether any member's matched topics changed. Called with mu
// held.
func (c *Coordinator) rematch(g *group) bool {
	var names []string
	changed := false
	for _, m := range g.members {
		if m.re == nil {
			continue
		}
		if names == nil {
			names = c.topicNames()
		}
		var matched []string
		for _, t := range names {
			if m.re.MatchString(t) {
				matched = append(matched, t)
			}
		}
		if !slices.Equal(matched, m.matched) {
			m.matched, changed = matched, true
		}
	}
	return changed
}

// topicNames returns the catalog's topic names, sorted, when the catalog
// can list them (TopicLister); none otherwise.
func (c *Coordinator) topicNames() []string {
	l, ok := c.topics.(TopicLister)
	if !ok {
		return []string{}
	}
	return slices.Sorted(maps.Keys(l.Counts()))
}
