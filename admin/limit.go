package admin

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener serves at most max connections at once, and keeps slow
// or idle peers from holding the slots legitimate requests need. When all
// slots are taken, Accept closes the connection that has been waiting
// longest for a request of its own (one that connected and sent nothing,
// sends its headers slowly, or idles between requests), provided it has
// waited at least evictAfter; a connection whose request is being
// handled is never closed. Only when every slot is busy or younger than
// evictAfter does Accept wait, so further peers wait in the kernel's
// listen backlog and hold none of the process's file descriptors, which
// the Kafka listener needs. 300 connections that send nothing or trickle
// their headers cannot starve a GET (TestHostileSlowAdminConnections):
// each new connection takes the slot of the oldest waiting one.
type limitListener struct {
	net.Listener
	max        int
	evictAfter time.Duration
	freed      chan struct{} // a slot was given back, or may soon be evictable
	done       chan struct{} // closed by Close, to end a waiting Accept
	once       sync.Once

	mu    sync.Mutex
	conns map[*limitConn]struct{} // guarded by mu
}

// evictAfter is how long a connection may wait for a request before a
// newer one may take its slot. Long enough for a client that connected
// to send its request; short enough that a GET behind hundreds of stalled
// peers is served in well under a second.
const evictAfter = 100 * time.Millisecond

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, max: n, evictAfter: evictAfter, freed: make(chan struct{}, 1),
		done: make(chan struct{}), conns: make(map[*limitConn]struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		victim, full := l.victim()
		if !full {
			break
		}
		if victim != nil {
			victim.Close()
			continue
		}
		select {
		case <-l.freed:
		case <-time.After(l.evictAfter):
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitConn{Conn: c, l: l}
	lc.waitingSince.Store(time.Now().UnixNano())
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// victim reports whether every slot is taken and, if so, the connection
// that has waited longest for a request, if any has waited evictAfter.
func (l *limitListener) victim() (victim *limitConn, full bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) < l.max {
		return nil, false
	}
	oldest := time.Now().Add(-l.evictAfter).UnixNano()
	for c := range l.conns {
		if c.busy.Load() > 0 {
			continue
		}
		if since := c.waitingSince.Load(); since <= oldest {
			victim, oldest = c, since
		}
	}
	return victim, true
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// track marks a connection busy while its request is handled, so that it
// is not taken for a stalled one.
func (l *limitListener) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(connKey{}).(*limitConn)
		if ok {
			c.busy.Add(1)
			defer func() {
				c.waitingSince.Store(time.Now().UnixNano())
				c.busy.Add(-1)
			}()
		}
		next.ServeHTTP(w, r)
	})
}

// connKey keys a request's *limitConn in its context (http.Server's
// ConnContext).
type connKey struct{}

func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// limitConn gives its slot back once, when closed.
type limitConn struct {
	net.Conn
	l            *limitListener
	once         sync.Once
	busy         atomic.Int32 // requests being handled
	waitingSince atomic.Int64 // Unix ns: accepted, or its last request answered
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		select {
		case c.l.freed <- struct{}{}:
		default:
		}
	})
	return err
}
