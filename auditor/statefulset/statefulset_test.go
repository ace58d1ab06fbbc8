package statefulset

import (
	"fmt"
	"testing"
)

func TestPodOf(t *testing.T) {
	for name, want := range map[string]string{
		"nats-0":      "nats/0",
		"nats-12":     "nats/12",
		"my-nats-2":   "my-nats/2",
		"east-nats-0": "east-nats/0",
		"nats--1":     "nats-/1",
		"nats-01":     "",
		"nats":        "",
		"nats-":       "",
		"-3":          "",
		"n1":          "",
		"nats-2a":     "",
		"nats-+2":     "",
	} {
		got := ""
		if p, ok := PodOf(name); ok {
			got = fmt.Sprintf("%s/%d", p.StatefulSet, p.Ordinal)
		}
		if got != want {
			t.Errorf("PodOf(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestPlace(t *testing.T) {
	three := map[string]string{"nats-0": "c1", "nats-1": "c1", "nats-2": "c1"}
	tests := []struct {
		name      string
		order     []string
		clusterOf map[string]string
		pods      string
		rollouts  string
	}{
		{"every pod, highest ordinal first: a partition", []string{"nats-2", "nats-1", "nats-0"}, three,
			"nats-2=nats/2 nats-1=nats/1 nats-0=nats/0 ", "nats:partition[nats-2 nats-1 nats-0] "},
		{"the highest ordinal last: OnDelete", []string{"nats-0", "nats-1", "nats-2"}, three,
			"nats-0=nats/0 nats-1=nats/1 nats-2=nats/2 ", "nats:OnDelete[nats-0 nats-1 nats-2] "},
		{"the highest ordinal left out: OnDelete, or the partition restarts it", []string{"nats-1", "nats-0"}, three,
			"nats-1=nats/1 nats-0=nats/0 ", "nats:OnDelete[nats-1 nats-0] "},
		{"the lowest ordinals left out: a partition stops above them", []string{"nats-2"}, three,
			"nats-2=nats/2 ", "nats:partition[nats-2] "},
		{"a cluster not all one set's pods: none", []string{"nats-2", "other-1", "nats-0"},
			map[string]string{"nats-0": "c1", "other-1": "c1", "nats-2": "c1"}, "", ""},
		{"names that are no pods: none", []string{"n3", "n2", "n1"},
			map[string]string{"n1": "c1", "n2": "c1", "n3": "c1"}, "", ""},
		{"two clusters, two sets", []string{"east-1", "west-0", "east-0"},
			map[string]string{"east-0": "east", "east-1": "east", "west-0": "west", "west-1": "west"},
			"east-1=east/1 west-0=west/0 east-0=east/0 ", "east:partition[east-1 east-0] west:OnDelete[west-0] "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, rollouts := Place(tt.order, tt.clusterOf)
			gotPods, gotRollouts := "", ""
			for _, s := range tt.order {
				if p, ok := pods[s]; ok {
					gotPods += fmt.Sprintf("%s=%s/%d ", s, p.StatefulSet, p.Ordinal)
				}
			}
			for _, r := range rollouts {
				gotRollouts += fmt.Sprintf("%s:%s%v ", r.StatefulSet, r.Strategy, r.Pods)
			}
			if gotPods != tt.pods || gotRollouts != tt.rollouts {
				t.Errorf("pods %q, rollouts %q; want %q, %q", gotPods, gotRollouts, tt.pods, tt.rollouts)
			}
		})
	}
}
