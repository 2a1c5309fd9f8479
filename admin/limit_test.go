package admin

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLimitListenerNeverEvictsABusyConnection: a connection whose request
// is being handled keeps its slot; a connection beyond the cap waits in
// the backlog until the handler is done, then is served.
func TestLimitListenerNeverEvictsABusyConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lim := newLimitListener(ln, 1)
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	hs := &http.Server{ConnContext: connContext, Handler: lim.track(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))}
	go hs.Serve(lim)
	t.Cleanup(func() { hs.Close() })
	url := "http://" + ln.Addr().String() + "/"
	get := func(c *http.Client) chan int {
		code := make(chan int, 1)
		go func() {
			resp, err := c.Get(url)
			if err != nil {
				code <- -1
				return
			}
			resp.Body.Close()
			code <- resp.StatusCode
		}()
		return code
	}
	first := get(&http.Client{Timeout: time.Minute, Transport: &http.Transport{}})
	<-entered
	second := get(&http.Client{Timeout: time.Minute, Transport: &http.Transport{}})
	select {
	case <-entered:
		t.Fatal("a second connection was served while the first was busy in the only slot")
	case code := <-first:
		t.Fatalf("the busy connection was closed: %d", code)
	case <-time.After(3 * evictAfter): // a bound on waiting for nothing to happen
	}
	close(release)
	require.Equal(t, http.StatusOK, <-first)
	require.Equal(t, http.StatusOK, <-second)
}
