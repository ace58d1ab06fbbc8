package auditor

import (
	"slices"
	"strconv"
	"strings"
)

// Pod is where a plan step's server runs when its cluster's servers are
// named as a StatefulSet's pods are: the official NATS Helm chart names
// each server after its pod (server_name: $SERVER_NAME, set to
// config.serverNamePrefix followed by $(POD_NAME): nats chart 2.14.2
// files/config/config.yaml:3, files/stateful-set/nats-container.yaml:22-23).
// The servers do not say they run in Kubernetes: the names alone say it.
type Pod struct {
	Name        string `json:"name"`
	StatefulSet string `json:"statefulset"`
	Ordinal     int    `json:"ordinal"`
}

// StatefulSetRollout says how a StatefulSet can follow the plan's order.
// A RollingUpdate with a partition restarts the pods at or above the
// partition, highest ordinal first; lowered one ordinal a step, it follows
// the plan only when the plan restarts every pod of the set, highest
// ordinal first. Otherwise OnDelete, and the plan's order by hand.
type StatefulSetRollout struct {
	StatefulSet string `json:"statefulset"`
	// Strategy is "partition" or "OnDelete".
	Strategy string `json:"strategy"`
	// Pods are the set's pods the plan restarts, in its order.
	Pods []string `json:"pods"`
	// Why says why the strategy fits.
	Why string `json:"why"`
}

// Strategies of a StatefulSetRollout.
const (
	RolloutPartition = "partition"
	RolloutOnDelete  = "OnDelete"
)

// podOf splits a server name as a StatefulSet pod's: NAME-ORDINAL.
func podOf(server string) (Pod, bool) {
	i := strings.LastIndexByte(server, '-')
	if i <= 0 || i == len(server)-1 {
		return Pod{}, false
	}
	digits := server[i+1:]
	n, err := strconv.Atoi(digits)
	// A StatefulSet's ordinals have no sign and no leading zero.
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return Pod{}, false
	}
	return Pod{Name: server, StatefulSet: server[:i], Ordinal: n}, true
}

// placePods names each step's pod where every server of its cluster (the
// steps' and the unchanged ones') is a pod of one StatefulSet, and says
// for each set how to follow the plan. A cluster named otherwise, or
// spread over two sets, gets no pods: the plan says nothing it cannot see.
func placePods(plan *Plan, clusterOf map[string]string) {
	sets := map[string]string{} // cluster -> StatefulSet; "" when not one
	ordinals := map[string][]int{}
	for server, cluster := range clusterOf {
		pod, ok := podOf(server)
		set, seen := sets[cluster]
		switch {
		case !ok, seen && set != pod.StatefulSet:
			sets[cluster] = ""
		case !seen:
			sets[cluster] = pod.StatefulSet
		}
		if ok {
			ordinals[pod.StatefulSet] = append(ordinals[pod.StatefulSet], pod.Ordinal)
		}
	}
	var order []string
	byName := map[string]*StatefulSetRollout{}
	for i := range plan.Steps {
		st := &plan.Steps[i]
		pod, ok := podOf(st.Server)
		if !ok || sets[clusterOf[st.Server]] != pod.StatefulSet {
			continue
		}
		st.Pod = &pod
		r := byName[pod.StatefulSet]
		if r == nil {
			r = &StatefulSetRollout{StatefulSet: pod.StatefulSet}
			byName[pod.StatefulSet] = r
			order = append(order, pod.StatefulSet)
		}
		r.Pods = append(r.Pods, pod.Name)
	}
	for _, set := range order {
		r := byName[set]
		all := slices.Sorted(slices.Values(ordinals[set]))
		slices.Reverse(all)
		var planned []int
		for _, name := range r.Pods {
			p, _ := podOf(name)
			planned = append(planned, p.Ordinal)
		}
		switch {
		case slices.Equal(planned, all):
			r.Strategy = RolloutPartition
			r.Why = "the plan restarts every pod of the set, highest ordinal first: lower the partition to each step's ordinal in turn"
		case len(planned) < len(all):
			r.Strategy = RolloutOnDelete
			r.Why = "the plan restarts some of the set's pods: a partition would restart the others too; delete each pod in the plan's order"
		default:
			r.Strategy = RolloutOnDelete
			r.Why = "the plan's order is not highest ordinal first (the meta leader goes last): delete each pod in the plan's order"
		}
		plan.StatefulSets = append(plan.StatefulSets, *r)
	}
}
