package auditor

import (
	"os"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
)

// TestCodesRegistry: every code is registered once, with a severity that is
// not OK and words to say when it is found.
func TestCodesRegistry(t *testing.T) {
	seen := map[findings.Code]bool{}
	for _, k := range findings.Codes {
		if seen[k.Code] {
			t.Errorf("%s registered twice", k.Code)
		}
		seen[k.Code] = true
		if k.Severity == findings.OK || k.Severity.String() != strings.ToUpper(k.Severity.String()) {
			t.Errorf("%s: severity %s", k.Code, k.Severity)
		}
		if d := k.Description; d == "" || strings.HasSuffix(d, ".") || strings.Contains(d, "\n") {
			t.Errorf("%s: description %q, want one line without a final period", k.Code, d)
		}
		if got, ok := findings.Info(k.Code); !ok || got.Code != k.Code || findings.SeverityOf(k.Code) != k.Severity {
			t.Errorf("Info(%s) = %+v, %v", k.Code, got, ok)
		}
	}
	gauges := map[string]*findings.AssetGauge{}
	for _, k := range findings.Codes {
		if k.Follower && !k.Leader {
			t.Errorf("%s is about a follower, which its leader decides, but not registered as Leader", k.Code)
		}
		if g := k.Gauge; g != nil {
			if other, ok := gauges[g.Name]; ok && other != g {
				t.Errorf("%s: two gauges named %s", k.Code, g.Name)
			}
			gauges[g.Name] = g
		}
	}
	// Codes that share a gauge are told apart by their verdicts; a gauge of
	// one code has none, and its Detail is a label the metrics know.
	sharing := map[*findings.AssetGauge][]findings.CodeInfo{}
	for _, k := range findings.Codes {
		if k.Gauge != nil {
			sharing[k.Gauge] = append(sharing[k.Gauge], k)
		}
	}
	for g, ks := range sharing {
		if g.Detail != "" && g.Detail != findings.DetailOp && g.Detail != findings.DetailFeature {
			t.Errorf("gauge %s: detail %q", g.Name, g.Detail)
		}
		verdicts := map[string]bool{}
		for _, k := range ks {
			v := k.GaugeVerdict()
			if (v == "") != (len(ks) == 1) || verdicts[v] {
				t.Errorf("%s: verdict %q on gauge %s, which %d codes share", k.Code, v, g.Name, len(ks))
			}
			verdicts[v] = true
		}
	}
	if _, ok := findings.Info("NO_SUCH_CODE"); ok || findings.SeverityOf("NO_SUCH_CODE") != findings.Unknown {
		t.Error("an unregistered code has a registration")
	}
}

// findingsDoc is the document whose table of findings lists every code,
// relative to this package, and the heading of that table.
const (
	findingsDoc     = "../docs/findings.md"
	findingsHeading = "## Findings"
)

// TestReadmeListsEveryCode holds the table of findings in findingsDoc to the
// registry: one row per code, in its order, with its severity.
func TestReadmeListsEveryCode(t *testing.T) {
	readme, err := os.ReadFile(findingsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n"+findingsHeading+"\n")
	if !ok {
		t.Fatalf("%s has no section %s", findingsDoc, findingsHeading)
	}
	table, _, _ = strings.Cut(table, "\n\n#")
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		if cells := strings.Split(line, " | "); len(cells) > 2 && strings.HasPrefix(cells[0], "| `") {
			rows = append(rows, strings.Trim(cells[0], "| `")+" "+cells[1])
		}
	}
	var want []string
	for _, k := range findings.Codes {
		want = append(want, string(k.Code)+" "+k.Severity.String())
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s's findings:\n%s\nthe registry:\n%s", findingsDoc, strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
