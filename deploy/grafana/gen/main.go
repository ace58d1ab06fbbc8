// Command gen builds the Grafana dashboard of nats-version-auditor as code, with the Grafana
// Foundation SDK, and writes it as JSON: deploy/grafana/nats-version-auditor.json, and the copy
// the Helm chart ships as a ConfigMap (a chart cannot read files outside its directory).
//
//	go generate ./deploy/grafana/gen   # or: go run ./deploy/grafana/gen
//	go run ./deploy/grafana/gen -check # exit 1 if a copy is out of date
//
// Every query reads only metrics package metrics exports (the tests hold it to that), filtered
// by the dashboard's namespace and job variables: one NATS system per (namespace, job), as the
// alert rules see it.
package main

//go:generate go run .

import (
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/genfiles"
)

// Paths relative to the module root.
const (
	dashboardPath      = "deploy/grafana/nats-version-auditor.json"
	chartDashboardPath = "deploy/helm/nats-version-auditor/files/dashboard.json"
)

// UID is the dashboard's stable uid: links to it survive regeneration.
const UID = "nats-version-auditor"

func main() {
	genfiles.Main(generate, "go generate ./deploy/grafana/gen")
}

// run writes, or with check compares, the generated files.
func run(root string, check bool) error {
	return genfiles.Run(root, check, generate, "go generate ./deploy/grafana/gen")
}

// generate is the dashboard, in deploy/ and in the chart.
func generate(string) ([]genfiles.File, error) {
	js, err := JSON()
	if err != nil {
		return nil, err
	}
	return []genfiles.File{{Path: dashboardPath, Content: js}, {Path: chartDashboardPath, Content: js}}, nil
}

// JSON returns the dashboard as the JSON written to the files, indented, ending in a newline.
func JSON() ([]byte, error) {
	d, err := Dashboard().Build()
	if err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(js, '\n'), nil
}

// sel selects one NATS system's auditors: the dashboard's variables.
const sel = `namespace=~"$namespace", job=~"$job"`

var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource).Expr(expr).LegendFormat(legend)
}

func instant(expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource).Expr(expr).Instant().Format(prometheus.PromQueryFormatTable)
}

func thresholds(steps ...dashboard.Threshold) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(steps)
}

func step(value *float64, color string) dashboard.Threshold {
	return dashboard.Threshold{Value: value, Color: color}
}

// valueText maps values to texts and colours.
func valueText(pairs ...[3]string) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, p := range pairs {
		opts[p[0]] = dashboard.ValueMappingResult{Text: cog.ToPtr(p[1]), Color: cog.ToPtr(p[2]), Index: cog.ToPtr(int32(i))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// statusMapping names nats_version_auditor_status: the Nagios codes.
var statusMapping = valueText(
	[3]string{"0", "OK", "green"}, [3]string{"1", "WARNING", "yellow"},
	[3]string{"2", "CRITICAL", "red"}, [3]string{"3", "UNKNOWN", "purple"})

func statPanel(title, description string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(description).Datasource(datasource).
		Height(4).Span(4).ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone)
}

func timeseriesPanel(title, description string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().Title(title).Description(description).Datasource(datasource).
		Height(8).Span(12).FillOpacity(10)
}

func tablePanel(title, description string) *table.PanelBuilder {
	return table.NewPanelBuilder().Title(title).Description(description).Datasource(datasource).Height(8).Span(12).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]bool{"Time": true},
		}})
}

// Dashboard builds the dashboard in the classic JSON model: the one Grafana's dashboard sidecar
// and file provisioning load in every Grafana version (the SDK's dashboardv2 needs Grafana 12's
// new dashboard API).
//
//lint:ignore SA1019 the v1 model is the portable one, see above
func Dashboard() *dashboard.DashboardBuilder {
	//lint:ignore SA1019 the v1 model is the portable one, see above
	return dashboard.NewDashboardBuilder("NATS version auditor").
		Uid(UID).
		Description("What nats-version-auditor sees: server versions against the floor, the consumers a rolling upgrade leaves led by or replicated to old servers, and whether the audit itself is complete.").
		Tags([]string{"nats", "jetstream", "nats-version-auditor"}).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("namespace").Label("Namespace").Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(nats_version_auditor_up, namespace)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Multi(true).IncludeAll(true).AllValue(".*")).
		WithVariable(dashboard.NewQueryVariableBuilder("job").Label("Auditor (job)").Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(nats_version_auditor_up{namespace=~"$namespace"}, job)`)}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Multi(true).IncludeAll(true).AllValue(".*")).
		WithRow(dashboard.NewRowBuilder("Overview")).
		WithPanel(statPanel("Status", "The worst status any auditor of the selection reports for its last audit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.").
			WithTarget(query(`max(nats_version_auditor_status{`+sel+`})`, "status")).
			Mappings(statusMapping).
			Thresholds(thresholds(step(nil, "green"), step(cog.ToPtr(1.0), "yellow"), step(cog.ToPtr(2.0), "red"), step(cog.ToPtr(3.0), "purple")))).
		WithPanel(statPanel("Audit complete", "1 when every auditor's last audit reached every expected server and read every reply. A rolling upgrade makes it 0 while a server is down.").
			WithTarget(query(`min(nats_version_auditor_up{`+sel+`})`, "complete")).
			Mappings(valueText([3]string{"0", "incomplete", "orange"}, [3]string{"1", "complete", "green"})).
			Thresholds(thresholds(step(nil, "orange"), step(cog.ToPtr(1.0), "green")))).
		WithPanel(statPanel("Last complete audit", "How long ago the freshest complete audit of the selection finished. NatsVersionAuditorStale fires past an hour.").
			WithTarget(query(`time() - max(nats_version_auditor_last_success_timestamp_seconds{`+sel+`} > 0)`, "age")).
			Unit("s").NoValue("never").
			Thresholds(thresholds(step(nil, "green"), step(cog.ToPtr(900.0), "yellow"), step(cog.ToPtr(3600.0), "red")))).
		WithPanel(statPanel("Last audit", "How long ago the freshest audit, complete or not, finished. Audits run on scrape: this follows the scrape interval.").
			WithTarget(query(`time() - max(nats_version_auditor_last_audit_timestamp_seconds{`+sel+`} > 0)`, "age")).
			Unit("s").NoValue("never").
			Thresholds(thresholds(step(nil, "green"), step(cog.ToPtr(300.0), "red")))).
		WithPanel(statPanel("Floor", "The version floor the servers are held against.").
			WithTarget(query(`max by (floor) (nats_version_auditor_floor_info{`+sel+`})`, "{{floor}}")).
			TextMode(common.BigValueTextModeName).ColorMode(common.BigValueColorModeNone)).
		WithPanel(statPanel("Servers below the floor", "NATS servers running a version below the floor now.").
			WithTarget(query(`count(max by (namespace, server_name) (nats_version_auditor_server_below_floor{`+sel+`}) > 0) or vector(0)`, "servers")).
			Thresholds(thresholds(step(nil, "green"), step(cog.ToPtr(1.0), "red")))).
		WithRow(dashboard.NewRowBuilder("Versions")).
		WithPanel(tablePanel("Version matrix", "Every server that answered the last audit: cluster, name, version, JetStream API level, and its verdict against the floor.").
			WithTarget(instant(`max by (namespace, server_cluster, server_name, server_version, api_level) (nats_version_auditor_server_info{`+sel+`})
* on (namespace, server_cluster, server_name) group_left
max by (namespace, server_cluster, server_name) (nats_version_auditor_server_below_floor{`+sel+`})`)).
			Mappings(valueText([3]string{"0", "at or above the floor", "green"}, [3]string{"1", "BELOW THE FLOOR", "red"})).
			OverrideByName("Value", []dashboard.DynamicConfigValue{
				{Id: "displayName", Value: "verdict"},
				{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}},
			})).
		WithPanel(timeseriesPanel("Servers below the floor, and versions per cluster", "How many servers of each cluster run below the floor, and how many distinct versions each cluster runs (more than one: a rolling upgrade in progress, or stuck).").
			WithTarget(query(`count by (namespace, server_cluster) (max by (namespace, server_cluster, server_name) (nats_version_auditor_server_below_floor{`+sel+`}) > 0)`, "{{server_cluster}} below the floor")).
			WithTarget(query(`max by (namespace, server_cluster) (nats_version_auditor_cluster_versions{`+sel+`})`, "{{server_cluster}} versions")).
			Min(0).Decimals(0)).
		WithRow(dashboard.NewRowBuilder("Consumers: the rollout's progress")).
		WithPanel(timeseriesPanel("Consumers led below the floor, and with a follower below it", "Led below the floor: a RESET ($JS.API.CONSUMER.RESET, first in 2.14) of such a consumer goes unanswered. With a follower below it: a RESET would crash that follower. Both fall to zero as a rolling upgrade completes. Counted from the findings, so --metrics.max-asset-series does not cap them.").
			WithTarget(query(`sum(nats_version_auditor_findings{`+sel+`, code="`+string(auditor.ConsumerLeaderBelowFloor)+`"})`, "led below the floor")).
			WithTarget(query(`sum(nats_version_auditor_findings{`+sel+`, code="`+string(auditor.ConsumerReplicaBelowFloor)+`"})`, "follower below the floor")).
			Min(0).Decimals(0)).
		WithPanel(timeseriesPanel("Consumers and streams led, per server", "Leadership moves away from a server in lame duck and back as the rollout goes on.").
			WithTarget(query(`max by (namespace, server_name) (nats_version_auditor_consumer_leaders{`+sel+`})`, "{{server_name}} consumers")).
			WithTarget(query(`max by (namespace, server_name) (nats_version_auditor_stream_leaders{`+sel+`})`, "{{server_name}} streams")).
			Min(0).Decimals(0)).
		WithPanel(tablePanel("Consumers below the floor now", "Each consumer led by a server below the floor (leader), or with a follower below it (follower), and that server. Capped by --metrics.max-asset-series (see Series dropped).").
			WithTarget(instant(`label_replace(max by (namespace, account, stream, consumer, server_name) (nats_version_auditor_consumer_leader_below_floor{` + sel + `}), "role", "leader", "", "")
or
label_replace(max by (namespace, account, stream, consumer, server_name) (nats_version_auditor_consumer_replica_below_floor{` + sel + `}), "role", "follower", "", "")`))).
		WithPanel(timeseriesPanel("Series dropped", "Per-consumer series left out by --metrics.max-asset-series.").
			WithTarget(query(`sum(nats_version_auditor_asset_series_dropped{`+sel+`})`, "dropped")).
			Min(0).Decimals(0)).
		WithRow(dashboard.NewRowBuilder("Completeness")).
		WithPanel(timeseriesPanel("Missing servers", "Expected servers that did not answer the audit (an empty name: servers no other server could name). A rolling upgrade shows each server here in turn.").
			WithTarget(query(`max by (namespace, server_name) (nats_version_auditor_server_missing{`+sel+`})`, "{{server_name}}")).
			Min(0).Decimals(0)).
		WithPanel(tablePanel("Leafnode gaps", "Leafnode links whose peer never answered the audit (no system account on the link, or a hung peer): its version is unknown.").
			WithTarget(instant(`max by (namespace, server_name, peer, account) (nats_version_auditor_leafnode_unaudited{` + sel + `})`))).
		WithPanel(timeseriesPanel("Findings by code", "Findings of the last audits, by code and severity.").
			WithTarget(query(`sum by (code, severity) (nats_version_auditor_findings{`+sel+`}) > 0`, "{{code}} ({{severity}})")).
			Min(0).Decimals(0)).
		WithPanel(timeseriesPanel("Audit duration", "How long each auditor's last audit took: the time the servers' answers took to arrive, bounded by --timeout.").
			WithTarget(query(`max by (namespace, instance) (nats_version_auditor_audit_duration_seconds{`+sel+`})`, "{{instance}}")).
			Unit("s").Min(0))
}
