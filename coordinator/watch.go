package coordinator

// Watching the groups change, so that a test can wait for a state
// (broker.WaitGroup) without polling: a waiter takes Changed's channel,
// reads what it watches, and sleeps on the channel only if that is not
// yet what it waits for. Every method that may change a group closes the
// channel as it takes mu (lockForChange), and a store operation (a
// commit, a deletion of offsets) closes it once it is durable (track). A
// wake-up may find nothing changed: the waiter reads again and sleeps
// again.

// Changed returns a channel that is closed at the next change to any
// group: a join, sync, heartbeat, leave, expiry, rebalance, deletion, or a
// commit or removal of offsets once it is durable. A caller that takes it
// before reading the groups misses no change made after that read. Reads
// (Describe, Committed, Groups) never close it.
func (c *Coordinator) Changed() <-chan struct{} {
	for {
		if p := c.watch.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if c.watch.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// wake closes the channel Changed handed out, if anybody took one. With
// nobody watching it costs one atomic load.
func (c *Coordinator) wake() {
	if c.watch.Load() == nil {
		return
	}
	if p := c.watch.Swap(nil); p != nil {
		close(*p)
	}
}

// lockForChange takes mu for a method that may change a group, and wakes
// the watchers: they read the groups only once mu is released, so they
// see the change.
func (c *Coordinator) lockForChange() {
	c.mu.Lock()
	c.wake()
}
