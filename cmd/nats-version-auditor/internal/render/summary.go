package render

import (
	"fmt"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
)

// summary is what follows the status on the first line of check's and
// report's text: how many servers answered, the floor, and the findings by
// severity. Both documents open with it, so it is neither one's.
func summary(r *findings.Report) string {
	counts := map[findings.Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	return fmt.Sprintf("%d of %d expected servers answered, floor %s; %d %s (%d critical, %d unknown, %d warning)",
		len(r.Servers), r.ServersExpected, r.Floor, len(r.Findings), plural(len(r.Findings), "finding"),
		counts[findings.Critical], counts[findings.Unknown], counts[findings.Warning])
}
