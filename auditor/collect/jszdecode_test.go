package collect

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bytedance/sonic"
	"github.com/nats-io/nats-server/v2/server"
	segjson "github.com/segmentio/encoding/json"

	"github.com/natsaudit/nats-version-auditor/auditor/collect/internal/jsonscan"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// fuzzSeed reads the reply a committed fuzz seed holds.
func fuzzSeed(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 3)
	var data []byte
	if _, err := fmt.Sscanf(lines[1], "[]byte(%q)", &data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

func stdDecode(data []byte) (*jszReply, error) {
	var r jszReply
	if err := stdjson.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// TestDecodeJSZMatchesUnmarshal holds the JSZ decoder to encoding/json on
// the real replies of every server version the tests run (the fuzz seeds,
// written by `make fuzz-seeds`), on a large reply made with nats-server's
// own types, and on what a reply can hold at the edges.
func TestDecodeJSZMatchesUnmarshal(t *testing.T) {
	for name, data := range decodeInputs(t) {
		want, wantErr := stdDecode(data)
		got, err := decodeJSZReply(data)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", name, err, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n  %s\nencoding/json\n  %s", name, show(got), show(want))
		}
	}
}

// TestDecodeConfigMatchesUnmarshal holds the decoder to encoding/json on
// every config of those inputs, field by field: the replies compare as
// summaries, which a config decoded wrong can leave the same.
func TestDecodeConfigMatchesUnmarshal(t *testing.T) {
	n := 0
	for name, data := range decodeInputs(t) {
		var reply struct {
			Data struct {
				Accounts []struct {
					Streams []struct {
						Config    stdjson.RawMessage `json:"config"`
						Consumers []struct {
							Config stdjson.RawMessage `json:"config"`
						} `json:"consumer_detail"`
					} `json:"stream_detail"`
				} `json:"account_details"`
			} `json:"data"`
		}
		if stdjson.Unmarshal(data, &reply) != nil {
			continue
		}
		check := func(b []byte) {
			if len(b) == 0 {
				return
			}
			n++
			var want jszConfig
			wantErr := stdjson.Unmarshal(b, &want)
			d := jszDecoder{Scanner: jsonscan.New(b)}
			cfg, err := d.config()
			if err == nil {
				err = d.End()
			}
			if (err != nil) != (wantErr != nil) {
				t.Errorf("%s: config %s: error %v, encoding/json's %v", name, b, err, wantErr)
				return
			}
			if err != nil || string(b) == "null" {
				return
			}
			if !reflect.DeepEqual(cfg, &want) {
				t.Errorf("%s: config %s decoded\n  %+v\nencoding/json\n  %+v", name, b, cfg, want)
			}
		}
		for _, acc := range reply.Data.Accounts {
			for _, sd := range acc.Streams {
				check(sd.Config)
				for _, cd := range sd.Consumers {
					check(cd.Config)
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("%d configs compared", n)
	}
}

// TestDecodeConsumerCountsBounded holds the room the streams' consumer
// counts reserve to what the reply could list: a count is the server's
// word, a reply's length is not.
func TestDecodeConsumerCountsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"data":{"account_details":[{"name":"A","stream_detail":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"S%d","state":{"first_ts":"x","consumer_count":1000000},"consumer_detail":[{"name":"C"}]}`, i)
	}
	b.WriteString(`]}]}}`)
	data := []byte(b.String())
	r, err := decodeJSZReply(data)
	if err != nil {
		t.Fatal(err)
	}
	room := 0
	for _, sd := range r.Data.AccountDetails[0].Streams {
		room += cap(sd.Consumers)
		if len(sd.Consumers) != 1 || sd.Consumers[0].Name != "C" {
			t.Fatalf("stream %s: consumers %+v", sd.Name, sd.Consumers)
		}
	}
	if limit := len(data)/minConsumerBytes + 1000; room > limit {
		t.Errorf("%d bytes reserved room for %d consumers, want at most %d", len(data), room, limit)
	}
	// A count the reply can hold is taken as it is.
	r, err = decodeJSZReply([]byte(`{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","state":{"consumer_count":3},"consumer_detail":[{"name":"C"}]}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := cap(r.Data.AccountDetails[0].Streams[0].Consumers); c != 3 {
		t.Errorf("room for %d consumers, want the count's 3", c)
	}
}

// decodeInputs are the replies the decoder is held to encoding/json on:
// a generated one, the fuzz seeds (real replies of every server version),
// and the edge cases of JSON and of the projection.
func decodeInputs(t *testing.T) map[string][]byte {
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzJSZ/*")
	if len(seeds) == 0 {
		t.Fatal("no JSZ seeds")
	}
	inputs := map[string][]byte{"generated 3000 consumers": jszFixture(t, 3000)}
	for _, s := range seeds {
		inputs[filepath.Base(s)] = fuzzSeed(t, s)
	}
	for name, s := range map[string]string{
		"escapes":      `{"data":{"account_details":[{"name":"A\u00e9\"\\\/\b\f\n\r\t\ud83d\ude00\ud800x","stream_detail":[{"name":"S","consumer_detail":[{"name":"C"}]}]}]}}`,
		"not utf-8":    "{\"data\":{\"account_details\":[{\"name\":\"a\xffb\xc3\"}]}}",
		"nulls":        `{"data":{"meta_cluster":null,"account_details":[{"name":null,"stream_detail":[{"name":"S","cluster":null,"config":null,"consumer_detail":null}]}],"total":null},"error":null}`,
		"empty arrays": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","cluster":{"leader":"n1","replicas":[]},"consumer_detail":[]}]}]}}`,
		"null peer":    `{"data":{"meta_cluster":{"name":"c","leader":"n1","replicas":[null,{"name":"n2","current":true}],"cluster_size":3}}}`,
		"metadata":     `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","config":{"num_replicas":3,"metadata":{"x":1,"_nats.req.level":"4","y":[{}]}}}]}]}}`,
		"error":        `{"error":{"code":503,"err_code":10039,"description":"jetstream not enabled"}}`,
		"features": `{"data":{"account_details":[{"name":"A","id":"AID","stream_detail":[{"name":"S","config":{"num_replicas":3,` +
			`"allow_msg_ttl":true,"subject_delete_marker_ttl":60000000000,"allow_msg_counter":true,"allow_atomic":true,"allow_msg_schedules":true,` +
			`"persist_mode":"async","allow_batched":true,"mirror":{"name":"O","consumer":{"name":"D","deliver_subject":"d"},"external":{"api":"$JS.x.API"}},` +
			`"sources":[{"name":"P"},null]},"consumer_detail":[{"name":"C","config":{"ack_policy":"flow_control","deliver_subject":"ds",` +
			`"pause_until":"2030-01-01T00:00:00Z","priority_groups":["g"],"priority_policy":"pinned_client","priority_timeout":120000000000}}]}]}]}}`,
		"bad feature bool":   `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","config":{"allow_msg_ttl":"yes"}}]}]}}`,
		"bad feature int":    `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","config":{"subject_delete_marker_ttl":1.5}}]}]}}`,
		"bad feature mirror": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","config":{"mirror":[1]}}]}]}}`,
		"numbers":            `{"data":{"x":-0.5e+10,"y":[1,2.0,3E3,-0],"total":7}}`,
		"consumer counts": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S1","state":null,"consumer_detail":[{"name":"C"}]},` +
			`{"name":"S2","state":5},{"name":"S3","state":{"consumer_count":"x"},"consumer_detail":[]},{"name":"S4","state":{"consumer_count":-3,"consumer_count":1e3}},` +
			`{"name":"S5","state":{"consumer_count":99999999999},"consumer_detail":[{"name":"C"}]},{"name":"S6","state":{"consumer_count":1},"consumer_detail":[{"name":"C"},{"name":"D"}]}]}]}}`,
		"bad state": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","state":{"consumer_count":1,}}]}]}}`,
		"config edges": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","config":{"num_replicas":1,"num_replicas":3,"metadata":null,"mirror":null,"sources":null},` +
			`"consumer_detail":[{"name":"C","config":{"ack_policy":"none"},"config":{"num_replicas":2}},{"name":"D","config":"x"}]}]}]}}`,
		"config number":     `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","config":5}]}]}}`,
		"config null after": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","config":{"num_replicas":2},"config":null}]}]}]}}`,
		"config twice":      `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","config":{"ack_policy":"flow_control","num_replicas":3},"config":{"num_replicas":1}}]}]}]}}`,
		"duplicate key":     `{"data":{"total":1,"total":2}}`,
		"pull record": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","created":"2026-01-01T00:00:00Z",` +
			`"config":{"priority_groups":["g","h"],"priority_policy":"pinned_client","priority_timeout":120000000000,"max_ack_pending":1000},` +
			`"delivered":{"consumer_seq":5,"stream_seq":5,"last_active":"2026-01-01T00:01:00.5Z"},"ack_floor":{"consumer_seq":3,"stream_seq":3},` +
			`"num_ack_pending":2,"num_redelivered":0,"num_waiting":1,"num_pending":7,"ts":"2026-01-01T00:05:00Z",` +
			`"priority_groups":[{"group":"g","pinned_client_id":"PIN","pinned_ts":"2026-01-01T00:00:30Z"}]},` +
			`{"name":"D","config":{"priority_groups":["g"],"priority_policy":"overflow"},"priority_groups":[{"group":"g","pinned_ts":"0001-01-01T00:00:00Z"}]},` +
			`{"name":"E","num_pending":"x","config":{"ack_policy":"explicit"}}]}]}]}}`,
		"pull record before config": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","num_pending":3,"ts":"2026-01-01T00:05:00Z",` +
			`"priority_groups":[{"group":"g","pinned_client_id":"PIN","pinned_ts":"2026-01-01T00:00:30Z"}],"config":{"priority_policy":"overflow","priority_groups":["g"]}}]}]}]}}`,
		"pull record, two configs": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","config":{"priority_policy":"pinned_client"},` +
			`"num_waiting":2,"config":{"priority_policy":"overflow","max_ack_pending":5},"num_pending":1}]}]}]}}`,
		"pull record edges": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","config":{"priority_policy":"pinned_client"},` +
			`"delivered":null,"ack_floor":{"last_active":null,"x":[1]},"paused":true,"priority_groups":[{"group":"g","pinned_client_id":"P"}],"priority_groups":[],"created":null},` +
			`{"name":"D","config":{"priority_policy":"pinned_client"},"priority_groups":[null,{"group":"h","pinned_client_id":"X","pinned_ts":null}],"delivered":{"last_active":"2026-01-01T00:00:00.123456789+02:00"}},` +
			`{"name":"E","config":{"priority_policy":"pinned_client"},"priority_groups":null,"ts":"2026-01-01T00:05:00Z","created":"2026-01-01T00:00:00Z"}]}]}]}}`,
		"bad pull created": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","created":"x","config":{"priority_policy":"overflow"}}]}]}]}}`,
		"bad pull group":   `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","config":{"priority_policy":"overflow"},"priority_groups":[{"group":1}]}]}]}]}}`,
		"bad pull pending": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","config":{"priority_policy":"overflow"},"num_pending":-1}]}]}]}}`,
		"bad pull paused":  `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","config":{"priority_policy":"overflow"},"paused":"no"}]}]}]}}`,
		"bad pull record": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C","num_pending":"x",` +
			`"config":{"priority_groups":["g"],"priority_policy":"pinned_client"}}]}]}]}}`,
		"bad pull time": `{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[{"name":"C",` +
			`"config":{"priority_policy":"overflow"},"ts":"yesterday"}]}]}]}}`,
		"not an object":  `[]`,
		"bad total":      `{"data":{"total":1.5}}`,
		"string total":   `{"data":{"total":"1"}}`,
		"number name":    `{"data":{"account_details":[{"name":5}]}}`,
		"truncated":      `{"data":{"account_details":[{"name":"A"`,
		"trailing":       `{} x`,
		"bad escape":     `{"a":"\x"}`,
		"control char":   "{\"a\":\"\x01\"}",
		"bad number":     `{"a":01}`,
		"bad literal":    `{"a":tru}`,
		"lone minus":     `{"a":-}`,
		"missing colon":  `{"a" 1}`,
		"trailing comma": `{"a":1,}`,
		"big err_code":   `{"error":{"err_code":70000}}`,
		"empty":          ``,
	} {
		inputs[name] = []byte(s)
	}
	return inputs
}

func show(r *jszReply) string {
	b, _ := stdjson.Marshal(r)
	return string(b)
}

// jszFixture is a JSZ reply as a server of a 3-server cluster sends it:
// nats-server's own types, with configs, 300 consumers a stream over five
// accounts, every 20th stream R3, as internal/bench creates them.
func jszFixture(t testing.TB, consumers int) []byte {
	now := time.Now().UTC()
	info := server.ServerInfo{Name: "n1", Host: "127.0.0.1", ID: "NBBSAADQGV65ZM6VFT7GAU4W4ZOCRKUGOUGJLTD2ZM76GVSKKV76327Y",
		Cluster: "bench", Version: "2.14.0", JetStream: true, Time: now}
	js := &server.JSInfo{ID: info.ID, Now: now, Meta: &server.MetaClusterInfo{Name: "bench", Leader: "n1", Size: 3,
		Replicas: []*server.PeerInfo{{Name: "n2", Current: true}, {Name: "n3", Current: true}}}}
	accounts := map[string]*server.AccountDetail{}
	var order []string
	for i := 0; i*300 < consumers; i++ {
		acc := fmt.Sprintf("ACC%04d", i%5)
		ad := accounts[acc]
		if ad == nil {
			ad = &server.AccountDetail{Name: acc, Id: acc}
			accounts[acc] = ad
			order = append(order, acc)
		}
		name := fmt.Sprintf("S%04d", i)
		replicas, cluster := 1, &server.ClusterInfo{Name: "bench", Leader: "n1"}
		if i%20 == 0 {
			replicas = 3
			cluster.Replicas = []*server.PeerInfo{{Name: "n2", Current: true, Active: time.Millisecond}, {Name: "n3", Current: true}}
		}
		sd := server.StreamDetail{Name: name, Created: now, Cluster: cluster,
			Config: &server.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Retention: server.LimitsPolicy,
				MaxConsumers: -1, MaxMsgs: -1, MaxBytes: -1, MaxMsgsPer: -1, MaxMsgSize: -1, Storage: server.MemoryStorage,
				Replicas: replicas, Duplicates: 2 * time.Minute, Metadata: map[string]string{"_nats.req.level": "0"}},
			State: server.StreamState{Consumers: 300}}
		for c := i * 300; c < min((i+1)*300, consumers); c++ {
			cn := fmt.Sprintf("C%05d", c)
			sd.Consumer = append(sd.Consumer, &server.ConsumerInfo{Stream: name, Name: cn, Created: now,
				Config: &server.ConsumerConfig{Durable: cn, Name: cn, AckPolicy: server.AckExplicit, AckWait: 30 * time.Second,
					MaxDeliver: -1, MaxWaiting: 512, MaxAckPending: 1000, Metadata: map[string]string{"_nats.req.level": "0"}},
				Cluster: cluster, TimeStamp: now})
		}
		ad.Streams = append(ad.Streams, sd)
	}
	for _, acc := range order {
		js.AccountDetails = append(js.AccountDetails, accounts[acc])
	}
	js.Total = len(order)
	b, err := stdjson.Marshal(server.ServerAPIJszResponse{Server: &info, Data: js})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkDecodeJSZ decodes one server's JSZ reply with 10,000 consumers
// (about 6 MB) three ways: encoding/json and segmentio/encoding into the
// projection, and the audit's own decoder.
func BenchmarkDecodeJSZ(b *testing.B) {
	data := jszFixture(b, 10_000)
	for _, d := range []struct {
		name   string
		decode func([]byte) (*jszReply, error)
	}{
		{"encoding-json", stdDecode},
		{"segmentio", func(data []byte) (*jszReply, error) {
			var r jszReply
			err := segjson.Unmarshal(data, &r)
			return &r, err
		}},
		{"decodeJSZReply", decodeJSZReply},
		// The floor under any decoder that fails on a malformed reply: only
		// checking the bytes, with no field read. skip is the check of a
		// value this decoder's scanner (auditor/collect/internal/jsonscan) runs; sonic-valid
		// is the fastest validator we found for Go (JIT-compiled, SIMD).
		{"skip", func(data []byte) (*jszReply, error) {
			s := jsonscan.New(data)
			if err := s.Skip(); err != nil {
				return nil, err
			}
			return nil, s.End()
		}},
		{"sonic-valid", func(data []byte) (*jszReply, error) {
			if !sonic.Valid(data) {
				return nil, errors.New("not JSON")
			}
			return nil, nil
		}},
	} {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := d.decode(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/consumer")
		})
	}
}

// BenchmarkDecodeJSZPinned decodes the reply of BenchmarkDecodeJSZ with
// every consumer a pinned_client one: the most the record of who pulls
// (PullState) can cost a reply.
func BenchmarkDecodeJSZPinned(b *testing.B) {
	data := jszFixture(b, 10_000)
	data = bytes.ReplaceAll(data, []byte(`"ack_policy":"explicit"`),
		[]byte(`"ack_policy":"explicit","priority_policy":"pinned_client","priority_groups":["g"],"priority_timeout":120000000000`))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := decodeJSZReply(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/consumer")
}

// BenchmarkMerge merges three servers' JSZ replies of 10,000 consumers each
// and lists the merged assets, as Collect does after the replies arrive.
func BenchmarkMerge(b *testing.B) {
	data := jszFixture(b, 10_000)
	var pages []*jszData
	for range 3 {
		r, err := decodeJSZReply(data)
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, r.Data)
	}
	for b.Loop() {
		m := newMerger()
		for i, js := range pages {
			m.add(fmt.Sprintf("n%d", i+1), "", js)
		}
		_, _ = m.streams(), m.consumers()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/30_000, "ns/report")
}

// TestUnreadableRequiredLevel: a _nats.req.level that is not a number is
// LevelUnreadable, not 0.
func TestUnreadableRequiredLevel(t *testing.T) {
	if got := (&jszConfig{Metadata: struct {
		RequiredLevel string `json:"_nats.req.level"`
	}{"x"}}).requiredLevel(); got != snapshot.LevelUnreadable {
		t.Fatalf("requiredLevel of %q = %d", "x", got)
	}
}
