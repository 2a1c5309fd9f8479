package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/wireclient"
)

// ErrNeedsAdmin is returned by the partition lab against a broker in
// another process when it has no admin API address, or one that is not
// that broker's: its fault goes through that API, and must go to the
// broker the lab was pointed at.
var ErrNeedsAdmin = errors.New("the partition lab puts a fault on the broker through its admin API: give its address")

// remoteFaults is the fault API of a broker in another process: POST,
// GET and DELETE /v1/faults on its admin API, at admin (host:port).
type remoteFaults struct {
	admin string
	id    string // the fault put in force
	// what describes the fault for the clean-up's report; inForce says
	// it has not been removed yet.
	what    string
	inForce bool
	// cleaned says cleanup removed it (or tried: cleanErr).
	cleaned  bool
	cleanErr error
}

// call sends one admin request, as JSON, and decodes the answer into out
// (when not nil); a status other than 200 is an error with the API's
// message.
func (r *remoteFaults) call(ctx context.Context, method, path string, body, out any) error {
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.admin+path, payload)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("lab partition: the admin API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("lab partition: %s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// check makes sure that the admin API is the one of the broker at addr,
// on the real clock, before the lab makes anything there: the brokers
// GET /v1/cluster names must be those the broker at addr advertises in
// its Metadata (so an address of another form for the same broker,
// localhost for 127.0.0.1, passes, and another broker's API does not).
// A broker on a manual clock never expires the member the lab cuts off.
func (r *remoteFaults) check(ctx context.Context, addr string) error {
	conn, err := wireclient.Dial(ctx, addr, "lab")
	if err != nil {
		return err
	}
	defer conn.Close()
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	meta.Topics = []kmsg.MetadataRequestTopic{} // no topics: the brokers only
	resp, err := Request[*kmsg.MetadataResponse](ctx, conn, meta)
	if err != nil {
		return err
	}
	var kafka []string
	for _, b := range resp.Brokers {
		kafka = append(kafka, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	slices.Sort(kafka)

	var cluster struct {
		Brokers []struct {
			Host string `json:"host"`
			Port int32  `json:"port"`
		} `json:"brokers"`
		Clock string `json:"clock"`
	}
	if err := r.call(ctx, "GET", "/v1/cluster", nil, &cluster); err != nil {
		return fmt.Errorf("%w: the admin API at %s does not say which broker it serves (%v); give --admin, the address the broker at %s was started with (its --admin flag)",
			ErrNeedsAdmin, r.admin, err, addr)
	}
	var admin []string
	for _, b := range cluster.Brokers {
		admin = append(admin, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	slices.Sort(admin)
	if !slices.Equal(kafka, admin) {
		return fmt.Errorf("%w: the admin API at %s serves the broker at %s, not the one at %s (which advertises %s); give --admin, the address the broker at %s was started with (its --admin flag)",
			ErrNeedsAdmin, r.admin, orNone(admin), addr, orNone(kafka), addr)
	}
	if cluster.Clock == "manual" {
		return fmt.Errorf("lab partition: the broker at %s runs on a manual clock: its expiry step runs only when asked, so A's lease would never end; run the lab without --broker, where it moves its own broker's clock", addr)
	}
	return nil
}

// orNone joins addresses for a message, "none" for none.
func orNone(addrs []string) string {
	if len(addrs) == 0 {
		return "none"
	}
	return strings.Join(addrs, ", ")
}

// cut puts the fault in force. The POST is not cut short by the end of
// ctx (an interrupt): a fault the broker made is then one the lab knows,
// and removes; the next step sees ctx's end.
func (r *remoteFaults) cut(ctx context.Context, group, member string) error {
	var out struct {
		ID string `json:"id"`
	}
	body := map[string]any{"keys": []int{12}, "group": group, "member": member, "drop": true, "count": -1}
	post, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.call(post, "POST", "/v1/faults", body, &out); err != nil {
		return err
	}
	r.id, r.inForce = out.ID, true
	r.what = fmt.Sprintf("the heartbeats of %s in %s", member, group)
	return nil
}

func (r *remoteFaults) waitHit(ctx context.Context) error {
	var failed error
	err := poll(ctx, func() bool {
		var list struct {
			Faults []struct {
				ID   string `json:"id"`
				Hits int64  `json:"hits"`
			} `json:"faults"`
		}
		if failed = r.call(ctx, "GET", "/v1/faults", nil, &list); failed != nil {
			return true
		}
		for _, f := range list.Faults {
			if f.ID == r.id && f.Hits > 0 {
				return true
			}
		}
		return false
	})
	return errors.Join(failed, err)
}

func (r *remoteFaults) remove(ctx context.Context) error {
	if err := r.call(ctx, "DELETE", "/v1/faults/"+r.id, struct{}{}, nil); err != nil {
		return err
	}
	r.inForce = false
	return nil
}

// cleanup removes the fault if the run left it in force (it failed or
// was interrupted between putting it in force and removing it); report
// says what it removed or could not.
func (r *remoteFaults) cleanup(ctx context.Context) error {
	if !r.inForce {
		return nil
	}
	r.cleaned = true
	r.cleanErr = r.remove(ctx)
	return r.cleanErr
}

// report writes what cleanup removed, or could not.
func (r *remoteFaults) report(w io.Writer) {
	switch {
	case !r.cleaned:
	case r.cleanErr != nil:
		fmt.Fprintf(w, "lab: could not remove fault %s (%s) through the admin API at %s: %v; DELETE /v1/faults/%s there removes it.\n",
			r.id, r.what, r.admin, r.cleanErr, r.id)
	default:
		fmt.Fprintf(w, "lab: removed fault %s (%s) from the broker.\n", r.id, r.what)
	}
}
