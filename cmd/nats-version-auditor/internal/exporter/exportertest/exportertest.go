// Package exportertest asks a running exporter's HTTP API as the tests of
// the exporter and of `serve` do.
package exportertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/client"
)

// API is the HTTP API at Base (http://host:port).
type API struct {
	Base string
}

// Get asks for path and returns the status code and body.
func (a *API) Get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(a.Base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ConsumerAt asks about APP's consumer and decodes the answer into the
// client package's type.
func (a *API) ConsumerAt(t testing.TB, stream, consumer, query string) (int, client.Consumer, string) {
	t.Helper()
	return a.ConsumerIn(t, "APP", stream, consumer, query)
}

// ConsumerIn is ConsumerAt for the consumer of any account, by id or name.
func (a *API) ConsumerIn(t testing.TB, account, stream, consumer, query string) (int, client.Consumer, string) {
	t.Helper()
	code, body := a.Get(t, "/api/v1/consumers/"+url.PathEscape(account)+"/"+stream+"/"+consumer+query)
	var c client.Consumer
	dec := json.NewDecoder(strings.NewReader(body))
	if code == http.StatusOK {
		// The client package must know every field the API sends.
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s/%s: %d, not the client's JSON: %v\n%s", stream, consumer, code, err, body)
	}
	return code, c, body
}
