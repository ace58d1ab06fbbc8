package releases_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func TestFeatureHandlingByVersion(t *testing.T) {
	versions := []string{"2.10.27", "2.11.0", "2.11.8", "2.11.9", "2.11.12", "2.12.0", "2.12.4", "2.12.5", "2.12.15", "2.14.0-RC.2", "2.14.0", "2.15.3"}
	// Per feature, what each version above does with an existing asset,
	// abbreviated: S supported, I ignored online, O held offline, N not
	// loaded, C not created, X crashes on decode.
	want := map[string]string{
		"msg_ttl":                     "I S S S S S S S S S S S",
		"delete_marker_ttl":           "I S S S S S S S S S S S",
		"pause":                       "I S S S S S S S S S S S",
		"priority_groups":             "I S S S S S S S S S S S",
		"priority_prioritized":        "I N N N N S S S S S S S",
		"msg_counter":                 "I I I O O S S S S S S S",
		"atomic_batch":                "I I I O O S S S S S S S",
		"msg_schedules":               "I I I O O S S S S S S S",
		"async_persist":               "I I I O O S S S S S S S",
		"transform_random":            "C C C C C S S S S S S S",
		"transform_left_right":        "S C C C C C C C C C C S",
		"source_transform_left_right": "C C C C C C C C C C C S",
		"fast_batch":                  "I I I O O O O O O O S S",
		"ack_flow_control":            "N N N N N N N X X X S S",
		"durable_sourcing":            "I I I O O O O O O O S S",
		"consumer_sourcing":           "I I I O O O O O O O S S",
	}
	// And with a create it handles: R refused, I created without it.
	wantCreate := map[string]string{
		"msg_ttl":                     "I S S S S S S S S S S S",
		"priority_prioritized":        "I R R R R S S S S S S S",
		"msg_counter":                 "I I I I I S S S S S S S",
		"fast_batch":                  "I I I I I R R R R R S S",
		"transform_random":            "R R R R R S S S S S S S",
		"transform_left_right":        "S R R R R R R R R R R S",
		"source_transform_left_right": "R R R R R R R R R R R S",
		"ack_flow_control":            "R R R R R R R R R R S S",
		"durable_sourcing":            "I I I I I R R R R R S S",
		"consumer_sourcing":           "I I I I I R R R R R S S",
	}
	abbrev := map[releases.Outcome]string{releases.Supported: "S", releases.IgnoredOnline: "I", releases.HeldOffline: "O",
		releases.NotLoaded: "N", releases.NotCreated: "C", releases.CrashesOnDecode: "X", releases.CreateRefused: "R"}
	if len(want) != len(releases.Features) {
		t.Errorf("%d features, %d rows here", len(releases.Features), len(want))
	}
	for _, f := range releases.Features {
		var got, gotCreate []string
		for _, v := range versions {
			parsed, err := version.ParseVersion(v)
			if err != nil {
				t.Fatal(err)
			}
			h := f.HandlingBy(parsed)
			got = append(got, abbrev[h.Asset])
			gotCreate = append(gotCreate, abbrev[h.Create])
		}
		if g := strings.Join(got, " "); g != want[f.Name] {
			t.Errorf("%s assets:  %s, want %s (versions %v)", f.Name, g, want[f.Name], versions)
		}
		if w, ok := wantCreate[f.Name]; ok {
			if g := strings.Join(gotCreate, " "); g != w {
				t.Errorf("%s creates: %s, want %s", f.Name, g, w)
			}
		}
	}
}

func TestFeatureHandlingOfAnUnreadableVersion(t *testing.T) {
	for _, f := range releases.Features {
		// What a server that reports no version parses as.
		h := f.HandlingBy(version.Version{})
		worst := releases.Supported
		for _, o := range f.Older {
			if o.Asset == releases.CrashesOnDecode {
				worst = releases.CrashesOnDecode
			}
		}
		if worst == releases.CrashesOnDecode && h.Asset != worst {
			t.Errorf("%s: an unreadable version gets %s, want %s", f.Name, h.Asset, worst)
		}
		if h.Asset == releases.Supported {
			t.Errorf("%s: an unreadable version is said to support it", f.Name)
		}
	}
}

// TestFeatureTableIsComplete holds every row to the shape its users rely
// on: ranges that cover every older version without a gap, and evidence.
func TestFeatureTableIsComplete(t *testing.T) {
	if len(releases.Features) > 64 {
		t.Fatalf("%d features do not fit a FeatureSet", len(releases.Features))
	}
	names := map[string]bool{}
	for _, f := range releases.Features {
		if names[f.Name] {
			t.Errorf("feature %s listed twice", f.Name)
		}
		names[f.Name] = true
		if f.Title == "" || f.Source == "" || f.Uses == nil || f.Level < 1 || f.Since.IsZero() {
			t.Errorf("%s: incomplete row %+v", f.Name, f)
		}
		if f.Kind != releases.KindStream && f.Kind != releases.KindConsumer {
			t.Errorf("%s: kind %q", f.Name, f.Kind)
		}
		var from version.Version
		for _, h := range f.Older {
			if h.From != from {
				t.Errorf("%s: range starts at %q, want %q (no gap, no overlap)", f.Name, h.From, from)
			}
			if h.Evidence == "" {
				t.Errorf("%s: range [%s, %s) has no evidence", f.Name, h.From, h.Below)
			}
			// An older range may support it (2.10 takes left() and right()
			// in a stream's transform, which 2.11.0 to 2.14.6 refuse),
			// but whole, and not the newest: that one makes Since.
			if (h.Asset == releases.Supported) != (h.Create == releases.Supported) ||
				(h.Asset == releases.Supported && h.Below == f.Since) {
				t.Errorf("%s: range [%s, %s) supports it in part, or just below Since", f.Name, h.From, h.Below)
			}
			from = h.Below
		}
		if from != f.Since {
			t.Errorf("%s: older ranges end at %q, want %s", f.Name, from, f.Since)
		}
	}
}

// TestDetectFeaturesReadsServerConfigs writes configs with nats-server's
// own types and detects the features from their JSON, as JSZ carries it.
func TestDetectFeaturesReadsServerConfigs(t *testing.T) {
	pause := time.Now().Add(time.Hour)
	tests := []struct {
		kind releases.AssetKind
		cfg  any
		want []string
	}{
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, Name: "PLAIN"}, nil},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, AllowMsgTTL: true, SubjectDeleteMarkerTTL: time.Minute}, []string{"msg_ttl", "delete_marker_ttl"}},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, AllowMsgCounter: true, AllowAtomicPublish: true}, []string{"msg_counter", "atomic_batch"}},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, AllowMsgSchedules: true, PersistMode: server.AsyncPersistMode}, []string{"msg_schedules", "async_persist"}},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, PersistMode: server.DefaultPersistMode}, nil},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, AllowBatchPublish: true}, []string{"fast_batch"}},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, Mirror: &server.StreamSource{Name: "O",
			Consumer: &server.StreamConsumerSource{Name: "dur", DeliverSubject: "d"}}}, []string{"durable_sourcing"}},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, Sources: []*server.StreamSource{{Name: "A"},
			{Name: "B", Consumer: &server.StreamConsumerSource{Name: "dur", DeliverSubject: "d"}}}}, []string{"durable_sourcing"}},
		{releases.KindStream, server.StreamConfig{Storage: server.FileStorage, Mirror: &server.StreamSource{Name: "O"}}, nil},
		{releases.KindConsumer, server.ConsumerConfig{Durable: "plain", AckPolicy: server.AckExplicit}, nil},
		{releases.KindConsumer, server.ConsumerConfig{AckPolicy: server.AckFlowControl, DeliverSubject: "d"}, []string{"ack_flow_control"}},
		{releases.KindConsumer, server.ConsumerConfig{PauseUntil: &pause}, []string{"pause"}},
		{releases.KindConsumer, server.ConsumerConfig{PauseUntil: &time.Time{}}, nil},
		{releases.KindConsumer, server.ConsumerConfig{PriorityPolicy: server.PriorityOverflow, PriorityGroups: []string{"g"}}, []string{"priority_groups"}},
		{releases.KindConsumer, server.ConsumerConfig{PriorityPolicy: server.PriorityPinnedClient, PriorityGroups: []string{"g"}, PinnedTTL: time.Minute}, []string{"priority_groups"}},
		{releases.KindConsumer, server.ConsumerConfig{PriorityPolicy: server.PriorityPrioritized, PriorityGroups: []string{"g"}}, []string{"priority_groups", "priority_prioritized"}},
		// A stream predicate never fires on a consumer, nor the reverse.
		{releases.KindConsumer, server.StreamConfig{Storage: server.FileStorage, AllowMsgTTL: true}, nil},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			b, err := json.Marshal(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var c releases.AssetConfig
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			got := releases.DetectFeatures(tc.kind, &c).Names()
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: detected %v, want %v", b, got, tc.want)
			}
		})
	}
}
