package testutil

import (
	"regexp"
	"sync"
)

// Trigger is a Buffer that calls fire once, as soon as everything written
// to it matches re: a test that interrupts a run at a known point of its
// output (a lab's second step, a progress line) gives it as the run's
// writer and cancels the run's context in fire.
type Trigger struct {
	Buffer
	re   *regexp.Regexp
	fire func()
	once sync.Once
}

// NewTrigger returns a Trigger that calls fire when its content matches
// re.
func NewTrigger(re *regexp.Regexp, fire func()) *Trigger {
	return &Trigger{re: re, fire: fire}
}

// Write appends p, then calls fire if this is the first time the content
// matches.
func (t *Trigger) Write(p []byte) (int, error) {
	n, err := t.Buffer.Write(p)
	if t.re.MatchString(t.Buffer.String()) {
		t.once.Do(t.fire)
	}
	return n, err
}
