package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/fixture"
)

// mixedResult is the shared fixture (internal/fixture): a 2.14/2.14/2.12
// cluster with one server gone, a consumer led by 2.12, one followed by it,
// and an unaudited leafnode link.
func mixedResult() findings.Result { return fixture.Result() }

var mixedExposition = `
# HELP nats_version_auditor_up 1 if the last audit reached every expected server and read every reply, else 0.
# TYPE nats_version_auditor_up gauge
nats_version_auditor_up 0
# HELP nats_version_auditor_status Overall status of the last audit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
# TYPE nats_version_auditor_status gauge
nats_version_auditor_status 2
# HELP nats_version_auditor_last_success_timestamp_seconds When the last complete audit finished, in seconds since the epoch (0: never).
# TYPE nats_version_auditor_last_success_timestamp_seconds gauge
nats_version_auditor_last_success_timestamp_seconds 1.7e+09
# HELP nats_version_auditor_last_audit_timestamp_seconds When the last audit finished, complete or not, in seconds since the epoch (0: never).
# TYPE nats_version_auditor_last_audit_timestamp_seconds gauge
nats_version_auditor_last_audit_timestamp_seconds 1.7000001e+09
# HELP nats_version_auditor_audits_total Audits run since the auditor started.
# TYPE nats_version_auditor_audits_total counter
nats_version_auditor_audits_total 3
# HELP nats_version_auditor_consumer_pin_changes_total Pins of pinned_client consumers whose holder changed from one audit to the next, as their leaders reported them, since the auditor started: reason pin under the same leader (the pin lapsed or went to another pull), leader_change with a new leader (which starts with no pin: whoever pulls next takes it).
# TYPE nats_version_auditor_consumer_pin_changes_total counter
nats_version_auditor_consumer_pin_changes_total{reason="leader_change"} 0
nats_version_auditor_consumer_pin_changes_total{reason="pin"} 0
# HELP nats_version_auditor_audits_started_total Full audits started since the auditor started, by reason: first, no result yet; scrape, a scrape found the result older than --audit.min-interval (with --audit.full-interval 0); full_interval, --audit.full-interval passed since the last full audit; incomplete, the last audit was incomplete, which a check cannot stand in for; check, a check found the JetStream counts changed or a server silent, could not check, or cannot stand in (consumers with a priority policy); event, a server event, a leader change of an asset the result lacks, or a reconnect; max_age, an API request asked for a fresher audit.
# TYPE nats_version_auditor_audits_started_total counter
nats_version_auditor_audits_started_total{reason="check"} 0
nats_version_auditor_audits_started_total{reason="event"} 1
nats_version_auditor_audits_started_total{reason="first"} 1
nats_version_auditor_audits_started_total{reason="full_interval"} 1
nats_version_auditor_audits_started_total{reason="incomplete"} 0
nats_version_auditor_audits_started_total{reason="max_age"} 0
nats_version_auditor_audits_started_total{reason="scrape"} 0
# HELP nats_version_auditor_last_check_timestamp_seconds When a check last found every server's JetStream counts unchanged since the last full audit, in seconds since the epoch (0: not since that audit; --audit.full-interval).
# TYPE nats_version_auditor_last_check_timestamp_seconds gauge
nats_version_auditor_last_check_timestamp_seconds 1.70000013e+09
# HELP nats_version_auditor_leaders_heard_timestamp_seconds When leader changes the servers announced (LEADER_ELECTED advisories) were last applied to the last full audit's result, in seconds since the epoch (0: the result is the audit's alone).
# TYPE nats_version_auditor_leaders_heard_timestamp_seconds gauge
nats_version_auditor_leaders_heard_timestamp_seconds 1.70000012e+09
# HELP nats_version_auditor_audit_checks_total Checks serve ran instead of a full audit since the auditor started (--audit.full-interval): every server's JetStream counts asked in one broadcast, found unchanged since the last full audit; where consumers have a priority policy, their accounts' JSZ read again too.
# TYPE nats_version_auditor_audit_checks_total counter
nats_version_auditor_audit_checks_total 0
# HELP nats_version_auditor_audit_duration_seconds How long the last audit took.
# TYPE nats_version_auditor_audit_duration_seconds gauge
nats_version_auditor_audit_duration_seconds 0.25
# HELP nats_version_auditor_floor_info The version floor the last audit held the servers against.
# TYPE nats_version_auditor_floor_info gauge
nats_version_auditor_floor_info{floor="2.14.0"} 1
# HELP nats_version_auditor_findings Findings of the last audit by code.
# TYPE nats_version_auditor_findings gauge
` + mixedFindings() + `# HELP nats_version_auditor_server_info A server that answered the last audit.
# TYPE nats_version_auditor_server_info gauge
nats_version_auditor_server_info{api_level="3",server_cluster="c1",server_domain="",server_id="ID3",server_name="n3",server_version="2.12.15"} 1
nats_version_auditor_server_info{api_level="4",server_cluster="c1",server_domain="",server_id="ID1",server_name="n1",server_version="2.14.0"} 1
nats_version_auditor_server_info{api_level="4",server_cluster="c1",server_domain="",server_id="ID2",server_name="n2",server_version="2.14.0"} 1
# HELP nats_version_auditor_server_below_floor 1 if the server runs a version below the floor, else 0.
# TYPE nats_version_auditor_server_below_floor gauge
nats_version_auditor_server_below_floor{server_cluster="c1",server_name="n1"} 0
nats_version_auditor_server_below_floor{server_cluster="c1",server_name="n2"} 0
nats_version_auditor_server_below_floor{server_cluster="c1",server_name="n3"} 1
# HELP nats_version_auditor_server_missing Expected servers that did not answer the last audit; server_name is empty for those no server could name.
# TYPE nats_version_auditor_server_missing gauge
nats_version_auditor_server_missing{server_name="n4"} 1
# HELP nats_version_auditor_cluster_versions Number of distinct server versions in the cluster.
# TYPE nats_version_auditor_cluster_versions gauge
nats_version_auditor_cluster_versions{server_cluster="c1"} 2
# HELP nats_version_auditor_cluster_min_api_level Lowest JetStream API level the cluster's JetStream servers report: JSApiLevel of nats-server's jetstream_versioning.go, 1 from 2.11.0, 2 from 2.12.0, 3 from 2.12.5, 4 from 2.14.0, 5 from 2.15.0; 0 before 2.11, which has no levels. An asset needing a higher level is held offline, or on 2.10 run online and diverging.
# TYPE nats_version_auditor_cluster_min_api_level gauge
nats_version_auditor_cluster_min_api_level{server_cluster="c1"} 3
# HELP nats_version_auditor_consumer_leaders Consumers the server leads.
# TYPE nats_version_auditor_consumer_leaders gauge
nats_version_auditor_consumer_leaders{server_name="n1"} 1
nats_version_auditor_consumer_leaders{server_name="n2"} 1
nats_version_auditor_consumer_leaders{server_name="n3"} 1
# HELP nats_version_auditor_stream_leaders Streams the server leads.
# TYPE nats_version_auditor_stream_leaders gauge
nats_version_auditor_stream_leaders{server_name="n1"} 0
nats_version_auditor_stream_leaders{server_name="n2"} 1
nats_version_auditor_stream_leaders{server_name="n3"} 0
# HELP nats_version_auditor_consumer_leader_below_floor 1 for a consumer whose leader (server_name) runs below the floor; a leader before 2.14.0 leaves RESET unanswered. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_consumer_leader_below_floor gauge
nats_version_auditor_consumer_leader_below_floor{account="APP",account_name="",consumer="a",server_name="n3",stream="ORDERS"} 1
# HELP nats_version_auditor_consumer_replica_below_floor 1 for a consumer with a follower (server_name) below the floor; a follower before 2.14.0 crashes on a RESET its 2.14+ leader replicates. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_consumer_replica_below_floor gauge
nats_version_auditor_consumer_replica_below_floor{account="APP",account_name="",consumer="b",server_name="n3",stream="ORDERS"} 1
# HELP nats_version_auditor_leafnode_unaudited 1 for a leafnode link whose peer was not audited: it does not share the system account, or it is not answering.
# TYPE nats_version_auditor_leafnode_unaudited gauge
nats_version_auditor_leafnode_unaudited{account="APP",peer="edge",server_name="n1"} 1
# HELP nats_version_auditor_asset_series_dropped Per-asset (stream and consumer) series left out of this scrape by --metrics.max-asset-series.
# TYPE nats_version_auditor_asset_series_dropped gauge
nats_version_auditor_asset_series_dropped 0
`

// mixedFindings is the findings gauge of the fixture: one series per
// registered code, 0 but for the fixture's findings.
func mixedFindings() string {
	found := map[findings.Code]int{findings.ServerBelowFloor: 1, findings.ClusterMixedVersions: 1, findings.ConsumerLeaderBelowFloor: 1,
		findings.ConsumerReplicaBelowFloor: 1, findings.LeafnodeUnaudited: 1, findings.ServerMissing: 1}
	var b strings.Builder
	for _, k := range findings.Codes {
		fmt.Fprintf(&b, "nats_version_auditor_findings{code=%q,severity=%q} %d\n", k.Code, k.Severity, found[k.Code])
	}
	return b.String()
}

func TestCollectorExposition(t *testing.T) {
	res := mixedResult()
	res.Started[findings.ReasonFirst], res.Started[findings.ReasonFullInterval], res.Started[findings.ReasonEvent] = 1, 1, 1
	res.Amended, res.Checked = res.Finished.Add(20*time.Second), res.Finished.Add(30*time.Second)
	c := NewCollector(func() findings.Result { return res }, 0)
	if err := testutil.CollectAndCompare(c, strings.NewReader(mixedExposition)); err != nil {
		t.Fatal(err)
	}
	lint(t, c)
}

func TestCollectorCapsAssetSeries(t *testing.T) {
	res := mixedResult()
	c := NewCollector(func() findings.Result { return res }, 1)
	want := `
# HELP nats_version_auditor_asset_series_dropped Per-asset (stream and consumer) series left out of this scrape by --metrics.max-asset-series.
# TYPE nats_version_auditor_asset_series_dropped gauge
nats_version_auditor_asset_series_dropped 1
# HELP nats_version_auditor_consumer_leader_below_floor 1 for a consumer whose leader (server_name) runs below the floor; a leader before 2.14.0 leaves RESET unanswered. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_consumer_leader_below_floor gauge
nats_version_auditor_consumer_leader_below_floor{account="APP",account_name="",consumer="a",server_name="n3",stream="ORDERS"} 1
`
	err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"nats_version_auditor_asset_series_dropped", "nats_version_auditor_consumer_leader_below_floor", "nats_version_auditor_consumer_replica_below_floor")
	if err != nil {
		t.Fatal(err)
	}
}

func TestCollectorBeforeFirstAudit(t *testing.T) {
	c := NewCollector(func() findings.Result { return findings.Result{} }, 0)
	want := `
# HELP nats_version_auditor_up 1 if the last audit reached every expected server and read every reply, else 0.
# TYPE nats_version_auditor_up gauge
nats_version_auditor_up 0
# HELP nats_version_auditor_status Overall status of the last audit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
# TYPE nats_version_auditor_status gauge
nats_version_auditor_status 3
# HELP nats_version_auditor_last_success_timestamp_seconds When the last complete audit finished, in seconds since the epoch (0: never).
# TYPE nats_version_auditor_last_success_timestamp_seconds gauge
nats_version_auditor_last_success_timestamp_seconds 0
`
	err := testutil.CollectAndCompare(c, strings.NewReader(want), "nats_version_auditor_up", "nats_version_auditor_status",
		"nats_version_auditor_last_success_timestamp_seconds", "nats_version_auditor_server_info")
	if err != nil {
		t.Fatal(err)
	}
	// up, status, the four timestamps, audits_total, the check counter,
	// the audits started by reason, the two pin change counts and a
	// findings count per code; no floor_info before an audit has held
	// anything against one.
	fixed := 10 + int(findings.NumAuditReasons) + len(findings.Codes)
	if n := testutil.CollectAndCount(c); n != fixed {
		t.Errorf("%d series before the first audit, want the %d fixed ones", n, fixed)
	}
	if n := testutil.CollectAndCount(c, "nats_version_auditor_floor_info"); n != 0 {
		t.Errorf("floor_info before the first audit")
	}
}

// A report without a floor (an audit that had no policy to apply: an
// unreadable --policy.file) exports no floor_info; one with a floor
// exports its own, not one fixed at start.
func TestCollectorFloorFollowsTheReport(t *testing.T) {
	for _, text := range []string{"", "2.12.0", "2.15.0"} {
		var floor version.Version
		if text != "" {
			floor, _ = version.ParseFloor(text)
		}
		res := findings.Result{Report: auditor.Evaluate(&snapshot.Snapshot{}, auditor.Policy{Floor: floor})}
		c := NewCollector(func() findings.Result { return res }, 0)
		want := ""
		if text != "" {
			want = "# HELP nats_version_auditor_floor_info The version floor the last audit held the servers against.\n" +
				"# TYPE nats_version_auditor_floor_info gauge\n" +
				"nats_version_auditor_floor_info{floor=\"" + text + "\"} 1\n"
		}
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "nats_version_auditor_floor_info"); err != nil {
			t.Errorf("floor %q: %v", text, err)
		}
	}
}

func TestCollectorCrashesAndSourcing(t *testing.T) {
	r := &findings.Report{Snapshot: &snapshot.Snapshot{}, Findings: []findings.Finding{
		{Code: findings.AssetCrashesServer, Account: "APP", Stream: "FC", Consumer: "c", Server: "n3"},
		{Code: findings.SourcingResetUnanswered, Account: "APP", Stream: "ORIGIN", Consumer: "dur", Server: "n3"},
		{Code: findings.SourcingResetCrashesFollower, Account: "APP", Stream: "ORIGIN", Consumer: "dur2", Server: "n4", Peer: "n1"},
	}}
	c := NewCollector(func() findings.Result { return findings.Result{Report: r} }, 0)
	want := `
# HELP nats_version_auditor_asset_crashes_server 1 for a stream or consumer (consumer empty for a stream) that a server (server_name) of its JetStream domain cannot decode: that server panics at its next meta snapshot, whether it hosts the asset or not. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_asset_crashes_server gauge
nats_version_auditor_asset_crashes_server{account="APP",account_name="",consumer="c",server_name="n3",stream="FC"} 1
# HELP nats_version_auditor_sourcing_reset 1 for an origin consumer that a mirror or source RESETs by itself (durable sourcing): verdict unanswered, its leader (server_name) is before 2.14.0 and the mirror stalls; crashes_follower, its follower (server_name) is before 2.14.0 and crashes on the replicated reset, again on every restart. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_sourcing_reset gauge
nats_version_auditor_sourcing_reset{account="APP",account_name="",consumer="dur",server_name="n3",stream="ORIGIN",verdict="unanswered"} 1
nats_version_auditor_sourcing_reset{account="APP",account_name="",consumer="dur2",server_name="n4",stream="ORIGIN",verdict="crashes_follower"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "nats_version_auditor_asset_crashes_server", "nats_version_auditor_sourcing_reset"); err != nil {
		t.Fatal(err)
	}
	lint(t, c)
}

// lint fails the test on every problem testutil.CollectAndLint finds.
func lint(t *testing.T, c prometheus.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestCollectorFeatureFlags: one series per server and flag it reports,
// none for a server before 2.14.0, which reports no flags.
func TestCollectorFeatureFlags(t *testing.T) {
	r := &findings.Report{Snapshot: &snapshot.Snapshot{}, Servers: []findings.ServerReport{
		{Server: snapshot.Server{Name: "n1", Cluster: "c1", FeatureFlags: map[string]bool{"js_ack_fc_v2": false, "js_raft_delete_range": true}}},
		{Server: snapshot.Server{Name: "n2", Cluster: "c1"}},
	}}
	c := NewCollector(func() findings.Result { return findings.Result{Report: r} }, 0)
	want := `
# HELP nats_version_auditor_server_feature_flag_enabled 1 if the server's feature flag is on, else 0, as the server reports it in STATSZ (2.14.0 on; older servers have none): its config's value, else its release's default. js_raft_delete_range on makes a replicated mirror's leader propose deleteRangeOp, which a follower before 2.14.0 panics on; it is on by default from 2.15.0. js_snapshot_sources on (off by default) makes a 2.15 leader of a stream with sources send a snapshot that a follower before 2.15.0 cannot read.
# TYPE nats_version_auditor_server_feature_flag_enabled gauge
nats_version_auditor_server_feature_flag_enabled{flag="js_ack_fc_v2",server_cluster="c1",server_name="n1"} 0
nats_version_auditor_server_feature_flag_enabled{flag="js_raft_delete_range",server_cluster="c1",server_name="n1"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "nats_version_auditor_server_feature_flag_enabled"); err != nil {
		t.Fatal(err)
	}
	lint(t, c)
}

// TestCollectorShards: the findings about who pulls a shard each set the
// gauge their registration names, labelled by the consumer and its leader.
func TestCollectorShards(t *testing.T) {
	r := &findings.Report{Snapshot: &snapshot.Snapshot{}, Findings: []findings.Finding{
		{Code: findings.ConsumerPulledByNobody, Account: "APP", Stream: "WORK", Consumer: "shard-5", Server: "n3"},
		{Code: findings.ConsumerStalePin, Account: "APP", Stream: "WORK", Consumer: "shard-7", Server: "n1"},
	}}
	c := NewCollector(func() findings.Result { return findings.Result{Report: r} }, 0)
	want := `
# HELP nats_version_auditor_consumer_pulled_by_nobody 1 for a consumer with a priority policy whose leader (server_name) has a backlog, no pull waiting and no delivery or ack for longer than the policy's threshold: a shard nobody owns. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_consumer_pulled_by_nobody gauge
nats_version_auditor_consumer_pulled_by_nobody{account="APP",account_name="",consumer="shard-5",server_name="n3",stream="WORK"} 1
# HELP nats_version_auditor_consumer_stale_pin 1 for a pinned_client consumer whose leader (server_name) keeps a pin older than priority_timeout and delivers nothing, with messages pending and pulls waiting: a holder renews its pin and takes nothing. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_consumer_stale_pin gauge
nats_version_auditor_consumer_stale_pin{account="APP",account_name="",consumer="shard-7",server_name="n1",stream="WORK"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "nats_version_auditor_consumer_pulled_by_nobody", "nats_version_auditor_consumer_stale_pin"); err != nil {
		t.Fatal(err)
	}
	lint(t, c)
}

// TestCollectorOpsAndPeers: the findings of both axes of the table, what a
// follower does with an op its leader proposes and what a peer does with a
// feature of the asset's config, each set a gauge two codes share, told
// apart by the verdict and labelled by the row of the table (op, feature).
func TestCollectorOpsAndPeers(t *testing.T) {
	r := &findings.Report{Snapshot: &snapshot.Snapshot{}, Findings: []findings.Finding{
		{Code: findings.AssetOpCrashesFollower, Account: "APP", Stream: "M", Server: "n3", Peer: "n2", Op: "delete_range"},
		{Code: findings.AssetOpHaltsReplica, Account: "APP", Stream: "B", Server: "n4", Op: "atomic_batch_msg"},
		{Code: findings.AssetPeerNotRunning, Account: "ACXD", AccountName: "APP", Stream: "WORK", Consumer: "shard-1", Server: "n3", Feature: "priority_prioritized"},
		{Code: findings.AssetPeerDiverges, Account: "APP", Stream: "TTL", Server: "n5", Feature: "msg_ttl"},
	}}
	c := NewCollector(func() findings.Result { return findings.Result{Report: r} }, 0)
	want := `
# HELP nats_version_auditor_asset_op_follower_cannot_apply 1 for a replicated stream or consumer (consumer empty for a stream) with a follower (server_name) whose release predates a replicated operation (op) that its leader proposes, or a peer would if it led (delete_range: the delete range a mirror's leader proposes whenever its origin has a gap, with js_raft_delete_range on, the default from 2.15.0): verdict crashes_follower, a follower before 2.15 panics on it (Unknown group entry op type), and again on every restart; halts_replica, the follower runs on without its replica: a 2.15 or later one logs a critical write error for an operation it does not know and its replica stops voting; for snapshot_sources (the stream snapshot with sourcing state a 2.15 leader with js_snapshot_sources on sends a follower it catches up), a 2.14 follower does the same and an older one resets its replica in a loop. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_asset_op_follower_cannot_apply gauge
nats_version_auditor_asset_op_follower_cannot_apply{account="APP",account_name="",consumer="",op="atomic_batch_msg",server_name="n4",stream="B",verdict="halts_replica"} 1
nats_version_auditor_asset_op_follower_cannot_apply{account="APP",account_name="",consumer="",op="delete_range",server_name="n3",stream="M",verdict="crashes_follower"} 1
# HELP nats_version_auditor_asset_peer_lacks_feature 1 for a stream or consumer (consumer empty for a stream) with a peer (server_name) whose version does not have a feature of its config (feature), where its API level does not tell: verdict not_running, the peer holds it offline, never loads it or refuses it as it creates it, and the group runs on fewer peers than it has; diverges, the peer runs it online without the feature and its copy diverges from the others'. account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT.
# TYPE nats_version_auditor_asset_peer_lacks_feature gauge
nats_version_auditor_asset_peer_lacks_feature{account="ACXD",account_name="APP",consumer="shard-1",feature="priority_prioritized",server_name="n3",stream="WORK",verdict="not_running"} 1
nats_version_auditor_asset_peer_lacks_feature{account="APP",account_name="",consumer="",feature="msg_ttl",server_name="n5",stream="TTL",verdict="diverges"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "nats_version_auditor_asset_op_follower_cannot_apply", "nats_version_auditor_asset_peer_lacks_feature"); err != nil {
		t.Fatal(err)
	}
	lint(t, c)
}
