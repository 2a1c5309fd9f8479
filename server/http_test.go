package server

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// httpAnswer is the whole answer to an HTTP request on the Kafka port
// when the admin API is at admin ("" when it is off).
func httpAnswer(admin string) string {
	body := "this port speaks the Kafka protocol, not HTTP; the admin API and live page are off (minibroker serve --admin ADDR turns them on)\n"
	if admin != "" {
		body = "this port speaks the Kafka protocol, not HTTP; the admin API and live page are at http://" + admin + "/\n"
	}
	return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
}

// TestHTTPOnTheKafkaPort: an HTTP request on the Kafka port, whose
// first four bytes read as a frame of 1195725856 bytes ("GET "), is
// answered with a 400 whose body says that this port speaks Kafka and
// where the admin API is, then closed; the log says the same at Warn,
// with the method and the remote. Over a raw socket (the exact bytes)
// and through net/http's client, with and without an admin address.
func TestHTTPOnTheKafkaPort(t *testing.T) {
	t.Parallel()
	for _, admin := range []string{"127.0.0.1:9644", ""} {
		t.Run("admin="+admin, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.AdminAddr = admin }})
			addr := e.serve()

			conn, err := net.DialTimeout("tcp", addr, testTimeout)
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(testTimeout)))
			_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: "+addr+"\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
			require.NoError(t, err)
			got, err := io.ReadAll(conn) // until the broker closes
			require.NoError(t, err)
			assert.Equal(t, httpAnswer(admin), string(got))

			logged := e.logs.Find("closing connection: the request looks like HTTP, and this port speaks the Kafka protocol")
			require.Len(t, logged, 1)
			assert.Equal(t, slog.LevelWarn, logged[0].Level)
			wantAdmin := "off"
			if admin != "" {
				wantAdmin = "http://" + admin + "/"
			}
			assert.Equal(t, map[string]string{
				"remote": conn.LocalAddr().String(), "method": "GET", "admin": wantAdmin,
				"err": "protocol: frame size 1195725856 exceeds max 16777216", "suppressed": "0",
			}, logged[0].Attrs)

			// net/http's client, with a body, as a form post would send.
			resp, err := (&http.Client{Timeout: testTimeout}).Post("http://"+addr+"/v1/groups", "text/plain", strings.NewReader(strings.Repeat("x", 1<<10)))
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			_, wantBody, _ := strings.Cut(httpAnswer(admin), "\r\n\r\n")
			assert.Equal(t, wantBody, string(body))
		})
	}
}

// TestHTTPMethodsAreRecognised: the size prefixes that open an HTTP
// request are recognised, each as its method; any other large size, and
// a Kafka request, are not.
func TestHTTPMethodsAreRecognised(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "PRI"} {
		head := (m + " /")[:4]
		size := int32(uint32(head[0])<<24 | uint32(head[1])<<16 | uint32(head[2])<<8 | uint32(head[3]))
		got, ok := httpMethod(size)
		assert.True(t, ok, m)
		assert.Equal(t, m, got)
	}
	for _, size := range []int32{1195725857, 0x7fffffff, 16 << 20, -1, 0x47455420 + 1<<8} {
		_, ok := httpMethod(size)
		assert.False(t, ok, "%d", size)
	}
}

// TestHTTPAfterAKafkaRequestIsNotAnswered: only a connection's first
// request can be HTTP; the same bytes after a Kafka request close the
// connection unanswered, logged as a frame too large.
func TestHTTPAfterAKafkaRequestIsNotAnswered(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.AdminAddr = "127.0.0.1:9644" }})
	c := wiretest.Dial(t, e.serve(), "kafka")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	require.NoError(t, c.Send([]byte("GET / HTTP/1.1\r\n\r\n")))
	wiretest.RequireClosed(t, c)
	assert.Empty(t, e.logs.Find("closing connection: the request looks like HTTP, and this port speaks the Kafka protocol"))
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing connection")) == 1 }, "logged as any oversized frame")
}
