package main

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/metrics"
)

// reportFloorCollector is metrics.Collector with floor_info taken from the
// latest report rather than fixed at start: with --policy.file the floor can
// change between audits, and floor_info must name the floor the exported
// verdicts were judged against. An audit that had no policy to hold the
// servers against (its report has no floor) exports no floor_info.
type reportFloorCollector struct {
	latest         func() auditor.Result
	maxAssetSeries int
	floorDesc      *prometheus.Desc
}

func newReportFloorCollector(latest func() auditor.Result, maxAssetSeries int) *reportFloorCollector {
	c := &reportFloorCollector{latest: latest, maxAssetSeries: maxAssetSeries}
	descs := make(chan *prometheus.Desc)
	go func() {
		metrics.NewCollector(nil, "", maxAssetSeries).Describe(descs)
		close(descs)
	}()
	for d := range descs {
		if strings.Contains(d.String(), `fqName: "nats_version_auditor_floor_info"`) {
			c.floorDesc = d
		}
	}
	return c
}

// Describe sends the descriptors of metrics.Collector.
func (c *reportFloorCollector) Describe(ch chan<- *prometheus.Desc) {
	metrics.NewCollector(nil, "", c.maxAssetSeries).Describe(ch)
}

// Collect sends metrics.Collector's metrics of one result, with its floor.
func (c *reportFloorCollector) Collect(ch chan<- prometheus.Metric) {
	res := c.latest()
	floor := ""
	if res.Report != nil {
		floor = res.Report.Floor
	}
	inner := metrics.NewCollector(func() auditor.Result { return res }, floor, c.maxAssetSeries)
	if floor != "" {
		inner.Collect(ch)
		return
	}
	all := make(chan prometheus.Metric)
	go func() {
		inner.Collect(all)
		close(all)
	}()
	for m := range all {
		if m.Desc() != c.floorDesc {
			ch <- m
		}
	}
}
