// Package statefulset reads, from the servers' names, the Kubernetes
// StatefulSet pods a rollout restarts, and says how a StatefulSet can
// follow a restart order: a plan's steps name pods and a strategy with it.
//
// The official NATS Helm chart names each server after its pod
// (server_name: $SERVER_NAME, set to config.serverNamePrefix followed by
// $(POD_NAME): nats chart 2.14.2 files/config/config.yaml:3,
// files/stateful-set/nats-container.yaml:22-23). The servers do not say
// they run in Kubernetes: the names alone say it, so a cluster whose
// servers are not all one set's pods gets none.
package statefulset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pod is a StatefulSet's pod: its name, its set's and its ordinal.
type Pod struct {
	Name        string `json:"name"`
	StatefulSet string `json:"statefulset"`
	Ordinal     int    `json:"ordinal"`
}

// Strategy is how a StatefulSet restarts its pods on a new template.
type Strategy string

// The strategies Rollout chooses between. A RollingUpdate with a partition
// restarts the pods at or above the partition, highest ordinal first;
// lowered one ordinal a step, it follows an order that restarts the set's
// highest ordinals, highest first, and no other pod. Any other order is
// OnDelete: the pods deleted by hand in the order.
const (
	Partition Strategy = "partition"
	OnDelete  Strategy = "OnDelete"
)

// Rollout says how one StatefulSet follows an order.
type Rollout struct {
	StatefulSet string   `json:"statefulset"`
	Strategy    Strategy `json:"strategy"`
	// Pods are the set's pods the order restarts, in its order.
	Pods []string `json:"pods"`
	// Why says why the strategy fits.
	Why string `json:"why"`
}

// PodOf splits a server name as a StatefulSet pod's: NAME-ORDINAL.
func PodOf(server string) (Pod, bool) {
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

// Place names the pod of each server of order (the servers a rollout
// restarts, in turn) whose cluster's servers, clusterOf's keys, are all
// pods of one StatefulSet, and says for each such set how to follow the
// order. A server it names no pod of is absent from pods.
func Place(order []string, clusterOf map[string]string) (pods map[string]Pod, rollouts []Rollout) {
	sets := map[string]string{} // cluster -> StatefulSet; "" when not one
	ordinals := map[string][]int{}
	for server, cluster := range clusterOf {
		pod, ok := PodOf(server)
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
	pods = map[string]Pod{}
	var names []string
	bySet := map[string]*Rollout{}
	for _, server := range order {
		pod, ok := PodOf(server)
		if !ok || sets[clusterOf[server]] != pod.StatefulSet {
			continue
		}
		pods[server] = pod
		r := bySet[pod.StatefulSet]
		if r == nil {
			r = &Rollout{StatefulSet: pod.StatefulSet}
			bySet[pod.StatefulSet] = r
			names = append(names, pod.StatefulSet)
		}
		r.Pods = append(r.Pods, pod.Name)
	}
	for _, set := range names {
		r := bySet[set]
		all := slices.Sorted(slices.Values(ordinals[set]))
		slices.Reverse(all)
		var planned []int
		for _, name := range r.Pods {
			p, _ := PodOf(name)
			planned = append(planned, p.Ordinal)
		}
		switch {
		case slices.Equal(planned, all[:len(planned)]):
			r.Strategy = Partition
			r.Why = fmt.Sprintf("the set's highest ordinals first, down to %d: apply the new release with the partition at %d, so that no pod restarts, then lower it to each step's ordinal in turn", planned[len(planned)-1], len(all))
		case len(planned) < len(all):
			r.Strategy = OnDelete
			r.Why = "some of the set's pods, not its highest ordinals: a partition would restart others too; delete each pod in turn"
		default:
			r.Strategy = OnDelete
			r.Why = "not highest ordinal first (the meta leader goes last): delete each pod in turn"
		}
		rollouts = append(rollouts, *r)
	}
	return pods, rollouts
}
