package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
)

// TestClose_DrainsInFlight holds a put inside the store while the server
// shuts down: the put must still be answered 200, and new requests refused.
func TestClose_DrainsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := MustMockServer(t, &apitest.Store{PutCheckpointFn: func(context.Context, saver.PutCheckpoint) error {
		close(entered)
		<-release
		return nil
	}})
	if err := s.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	url := "http://" + s.Addr()

	body, _ := json.Marshal(putBody())
	inflight := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/threads/t/checkpoints", "application/json", bytes.NewReader(body))
		if err != nil {
			inflight <- -1
			return
		}
		resp.Body.Close()
		inflight <- resp.StatusCode
	}()
	<-entered

	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()

	// Shutdown closes the listener first; poll until new connections fail.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	for {
		resp, err := client.Get(url + "/healthz")
		if err != nil {
			break
		}
		resp.Body.Close()
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while a request was in flight", err)
	default:
	}

	close(release)
	if got, want := <-inflight, http.StatusOK; got != want {
		t.Fatalf("in-flight put: status %d, want %d", got, want)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
