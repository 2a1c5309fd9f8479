package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrNeedsAdmin is returned by the partition lab against a broker in
// another process when no admin API address is given: its fault goes
// through that API.
var ErrNeedsAdmin = errors.New("the partition lab puts a fault on the broker through its admin API: give its address")

// remoteFaults is the fault API of a broker in another process: POST,
// GET and DELETE /v1/faults on its admin API, at admin (host:port).
type remoteFaults struct {
	admin string
	id    string // the fault put in force
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

func (r *remoteFaults) cut(ctx context.Context, group, member string) error {
	var out struct {
		ID string `json:"id"`
	}
	body := map[string]any{"keys": []int{12}, "group": group, "member": member, "drop": true, "count": -1}
	if err := r.call(ctx, "POST", "/v1/faults", body, &out); err != nil {
		return err
	}
	r.id = out.ID
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
	return r.call(ctx, "DELETE", "/v1/faults/"+r.id, struct{}{}, nil)
}
