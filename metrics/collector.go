// Package metrics exposes the auditor's latest report to Prometheus.
//
// Files: collector.go, the collector and every metric's name and HELP;
// events.go, the counts of the servers' events serve watches; system.go,
// the system label on every series.
package metrics

import (
	"strconv"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

const namespace = "nats_version_auditor"

// DefaultMaxAssetSeries caps the per-asset (stream and consumer) series one scrape exposes.
const DefaultMaxAssetSeries = 500

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// accountHelp says what the account labels hold. account_name depends on
// account alone: it adds no series.
const accountHelp = " account is the account's id: its name, or in operator (JWT) mode its public key, with account_name the name in its JWT."

var (
	upDesc           = desc("up", "1 if the last audit reached every expected server and read every reply, else 0.")
	lastSuccessDesc  = desc("last_success_timestamp_seconds", "When the last complete audit finished, in seconds since the epoch (0: never).")
	lastAuditDesc    = desc("last_audit_timestamp_seconds", "When the last audit finished, complete or not, in seconds since the epoch (0: never).")
	durationDesc     = desc("audit_duration_seconds", "How long the last audit took.")
	auditsDesc       = desc("audits_total", "Audits run since the auditor started.")
	checksDesc       = desc("audit_checks_total", "Checks serve ran instead of a full audit since the auditor started (--audit.full-interval): every server's JetStream counts asked in one broadcast, found unchanged since the last full audit; where consumers have a priority policy, their accounts' JSZ read again too.")
	startedDesc      = desc("audits_started_total", "Full audits started since the auditor started, by reason: first, no result yet; scrape, a scrape found the result older than --audit.min-interval (with --audit.full-interval 0); full_interval, --audit.full-interval passed since the last full audit; incomplete, the last audit was incomplete, which a check cannot stand in for; check, a check found the JetStream counts changed or a server silent, could not check, or cannot stand in (consumers with a priority policy); event, a server event, a leader change of an asset the result lacks, or a reconnect; max_age, an API request asked for a fresher audit.", "reason")
	lastCheckDesc    = desc("last_check_timestamp_seconds", "When a check last found every server's JetStream counts unchanged since the last full audit, in seconds since the epoch (0: not since that audit; --audit.full-interval).")
	leadersHeardDesc = desc("leaders_heard_timestamp_seconds", "When leader changes the servers announced (LEADER_ELECTED advisories) were last applied to the last full audit's result, in seconds since the epoch (0: the result is the audit's alone).")
	pinChangesDesc   = desc("consumer_pin_changes_total", "Pins of pinned_client consumers whose holder changed from one audit to the next, as their leaders reported them, since the auditor started: reason pin under the same leader (the pin lapsed or went to another pull), leader_change with a new leader (which starts with no pin: whoever pulls next takes it).", "reason")
	floorDesc        = desc("floor_info", "The version floor the last audit held the servers against.", "floor")
	statusDesc       = desc("status", "Overall status of the last audit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	findingsDesc     = desc("findings", "Findings of the last audit by code.", "code", "severity")
	serverInfoDesc   = desc("server_info", "A server that answered the last audit.",
		"server_name", "server_id", "server_cluster", "server_domain", "server_version", "api_level")
	serverBelowDesc   = desc("server_below_floor", "1 if the server runs a version below the floor, else 0.", "server_name", "server_cluster")
	serverFlagDesc    = desc("server_feature_flag_enabled", "1 if the server's feature flag is on, else 0, as the server reports it in STATSZ (2.14.0 on; older servers have none): its config's value, else its release's default. js_raft_delete_range on makes a replicated mirror's leader propose deleteRangeOp, which a follower before 2.14.0 panics on; it is on by default from 2.15.0. js_snapshot_sources on (off by default) makes a 2.15 leader of a stream with sources send a snapshot that a follower before 2.15.0 cannot read.", "server_name", "server_cluster", "flag")
	serverMissingDesc = desc("server_missing", "Expected servers that did not answer the last audit; server_name is empty for those no server could name.", "server_name")
	clusterVerDesc    = desc("cluster_versions", "Number of distinct server versions in the cluster.", "server_cluster")
	clusterLevelDesc  = desc("cluster_min_api_level", "Lowest JetStream API level the cluster's JetStream servers report: JSApiLevel of nats-server's jetstream_versioning.go, 1 from 2.11.0, 2 from 2.12.0, 3 from 2.12.5, 4 from 2.14.0, 5 from 2.15.0; 0 before 2.11, which has no levels. An asset needing a higher level is held offline, or on 2.10 run online and diverging.", "server_cluster")
	consumerLedDesc   = desc("consumer_leaders", "Consumers the server leads.", "server_name")
	streamLedDesc     = desc("stream_leaders", "Streams the server leads.", "server_name")
	leafDesc          = desc("leafnode_unaudited", "1 for a leafnode link whose peer was not audited: it does not share the system account, or it is not answering.", "server_name", "peer", "account")
	pullersDesc       = desc("consumer_pullers", "Processes heard pulling a pinned_client consumer (its leader is server_name) within serve's --pull-watch, through the system account's import of its account's pull requests (docs/pulls.md); only consumers of accounts heard. More than 1: the shard has more than one owner; the pin lets one take messages and the others wait."+accountHelp,
		"account", "account_name", "stream", "consumer", "server_name")
	droppedDesc = desc("asset_series_dropped", "Per-asset (stream and consumer) series left out of this scrape by --metrics.max-asset-series.")

	assetDescs, seriesOf = assetGaugeDescs()
)

// codeSeries is how a finding of one code is exported on its per-asset
// gauge: the gauge and its descriptor, and the verdict label telling apart
// codes that share it.
type codeSeries struct {
	gauge   *findings.AssetGauge
	desc    *prometheus.Desc
	verdict string
}

// labels are the label values of finding f's series.
func (s codeSeries) labels(f findings.Finding) []string {
	v := []string{f.Account, f.AccountName, f.Stream, f.Consumer, f.Server}
	if s.gauge.Detail != "" {
		v = append(v, s.gauge.DetailOf(f))
	}
	if s.verdict != "" {
		v = append(v, s.verdict)
	}
	return v
}

// assetGaugeDescs makes the descriptors of the per-asset gauges the
// registry of finding codes names, in its order, and says by code which one
// a finding sets.
func assetGaugeDescs() ([]*prometheus.Desc, map[findings.Code]codeSeries) {
	verdicts := map[*findings.AssetGauge]bool{}
	for _, k := range findings.Codes {
		if k.Gauge != nil && k.GaugeVerdict() != "" {
			verdicts[k.Gauge] = true
		}
	}
	var descs []*prometheus.Desc
	made := map[*findings.AssetGauge]*prometheus.Desc{}
	byCode := map[findings.Code]codeSeries{}
	for _, k := range findings.Codes {
		g := k.Gauge
		if g == nil {
			continue
		}
		d, ok := made[g]
		if !ok {
			labels := []string{"account", "account_name", "stream", "consumer", "server_name"}
			if g.Detail != "" {
				labels = append(labels, g.Detail)
			}
			if verdicts[g] {
				labels = append(labels, "verdict")
			}
			d = desc(g.Name, g.Help+accountHelp, labels...)
			made[g] = d
			descs = append(descs, d)
		}
		s := codeSeries{gauge: g, desc: d}
		if verdicts[g] {
			s.verdict = k.GaugeVerdict()
		}
		byCode[k.Code] = s
	}
	return descs, byCode
}

// Collector turns the latest audit result into const metrics at collect time.
// It keeps no state of its own: every scrape reflects the result it is given.
type Collector struct {
	latest         func() findings.Result
	maxAssetSeries int
}

// NewCollector returns a collector of the results latest returns;
// maxAssetSeries caps the per-asset series (0 or less:
// DefaultMaxAssetSeries).
func NewCollector(latest func() findings.Result, maxAssetSeries int) *Collector {
	if maxAssetSeries <= 0 {
		maxAssetSeries = DefaultMaxAssetSeries
	}
	return &Collector{latest: latest, maxAssetSeries: maxAssetSeries}
}

// Describe sends the descriptors of every metric the collector may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, lastSuccessDesc, lastAuditDesc, durationDesc, auditsDesc, checksDesc, startedDesc, lastCheckDesc, leadersHeardDesc, pinChangesDesc, floorDesc,
		statusDesc, findingsDesc, serverInfoDesc, serverBelowDesc, serverFlagDesc, serverMissingDesc, clusterVerDesc, clusterLevelDesc, consumerLedDesc,
		streamLedDesc, leafDesc, pullersDesc, droppedDesc} {
		ch <- d
	}
	for _, d := range assetDescs {
		ch <- d
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// Collect sends the metrics of the latest result.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	res := c.latest()
	r := res.Report

	up, status := 0.0, float64(findings.Unknown)
	if r != nil {
		status = float64(r.Status)
		if r.Complete() {
			up = 1
		}
	}
	gauge(ch, upDesc, up)
	gauge(ch, statusDesc, status)
	gauge(ch, lastSuccessDesc, unixSeconds(res.LastSuccess))
	gauge(ch, lastAuditDesc, unixSeconds(res.Finished))
	gauge(ch, lastCheckDesc, unixSeconds(res.LastCheck()))
	gauge(ch, leadersHeardDesc, unixSeconds(res.Amended))
	ch <- prometheus.MustNewConstMetric(auditsDesc, prometheus.CounterValue, float64(res.Audits))
	ch <- prometheus.MustNewConstMetric(checksDesc, prometheus.CounterValue, float64(res.Checks))
	for reason, n := range res.Started {
		ch <- prometheus.MustNewConstMetric(startedDesc, prometheus.CounterValue, float64(n), findings.AuditReason(reason).String())
	}
	ch <- prometheus.MustNewConstMetric(pinChangesDesc, prometheus.CounterValue, float64(res.PinChanges.Pin), "pin")
	ch <- prometheus.MustNewConstMetric(pinChangesDesc, prometheus.CounterValue, float64(res.PinChanges.WithLeader), "leader_change")

	counts := map[findings.Code]int{}
	if r != nil {
		for _, f := range r.Findings {
			counts[f.Code]++
		}
	}
	for _, k := range findings.Codes {
		gauge(ch, findingsDesc, float64(counts[k.Code]), string(k.Code), k.Severity.String())
	}
	if r == nil {
		return
	}
	// The floor the report was judged against: it can change between audits
	// (--policy.file), and an audit without a policy has none to show.
	if !r.Floor.IsZero() {
		gauge(ch, floorDesc, 1, r.Floor.String())
	}
	gauge(ch, durationDesc, r.Snapshot.Duration.Seconds())

	for _, s := range r.Servers {
		gauge(ch, serverInfoDesc, 1, s.Name, s.ID, s.Cluster, s.Domain, s.Version, strconv.Itoa(s.APILevel))
		below := 0.0
		if s.Verdict == version.VerdictBelow {
			below = 1
		}
		gauge(ch, serverBelowDesc, below, s.Name, s.Cluster)
		for flag, on := range s.FeatureFlags {
			enabled := 0.0
			if on {
				enabled = 1
			}
			gauge(ch, serverFlagDesc, enabled, s.Name, s.Cluster, flag)
		}
		if s.JetStream {
			gauge(ch, consumerLedDesc, float64(s.ConsumersLed), s.Name)
			gauge(ch, streamLedDesc, float64(s.StreamsLed), s.Name)
		}
	}
	for _, cl := range r.Clusters {
		gauge(ch, clusterVerDesc, float64(len(cl.Versions)), cl.Name)
		if cl.MinAPILevel != nil {
			gauge(ch, clusterLevelDesc, float64(*cl.MinAPILevel), cl.Name)
		}
	}

	missing := map[string]int{}
	assetSeries, dropped := 0, 0
	for _, f := range r.Findings {
		switch f.Code {
		case findings.ServerMissing:
			missing[f.Server] += f.Count
		case findings.LeafnodeUnaudited:
			gauge(ch, leafDesc, 1, f.Server, f.Peer, f.Account)
		}
		s, ok := seriesOf[f.Code]
		if !ok {
			continue
		}
		if assetSeries >= c.maxAssetSeries {
			dropped++
			continue
		}
		assetSeries++
		gauge(ch, s.desc, 1, s.labels(f)...)
	}
	if sight := r.Snapshot.Pulls; sight != nil {
		for i := range r.Snapshot.Consumers {
			a := &r.Snapshot.Consumers[i]
			if a.Pull == nil || a.Pull.Policy != snapshot.PriorityPinnedClient || !sight.Visible[a.Account] {
				continue
			}
			if assetSeries >= c.maxAssetSeries {
				dropped++
				continue
			}
			assetSeries++
			gauge(ch, pullersDesc, float64(len(a.Pull.Pullers)), a.Account, a.AccountName, a.Stream, a.Consumer, a.Leader)
		}
	}
	for name, n := range missing {
		if n > 0 {
			gauge(ch, serverMissingDesc, float64(n), name)
		}
	}
	gauge(ch, droppedDesc, float64(dropped))
}
