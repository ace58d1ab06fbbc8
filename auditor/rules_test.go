package auditor

import (
	"slices"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
)

// Every test of the package evaluates with each finding held to the codes
// its rule names: a rule that adds a code it does not name panics there.
func init() { checkRuleCodes = true }

// asShipped turns the check off for a benchmark, which measures the code
// as it ships.
func asShipped(b *testing.B) {
	checkRuleCodes = false
	b.Cleanup(func() { checkRuleCodes = true })
}

// TestRulesNameRegisteredCodes: each rule has a name, a judge and codes
// registered in findings.Codes, and every code Evaluate can find is some
// rule's: the codes of the what-ifs alone are found by Assume.
func TestRulesNameRegisteredCodes(t *testing.T) {
	claimed := map[findings.Code]bool{}
	for _, r := range rules {
		if r.name == "" || r.judge == nil || len(r.codes) == 0 {
			t.Errorf("rule %+v is missing a name, a judge or its codes", r.name)
		}
		for _, c := range r.codes {
			if _, ok := findings.Info(c); !ok {
				t.Errorf("rule %q names %s, which findings.Codes does not register", r.name, c)
			}
			claimed[c] = true
		}
	}
	whatIfOnly := []findings.Code{findings.DowngradeBelowFloor, findings.UpgradePathUnsupported, findings.APILevelUnknown, findings.FeatureFlagsRefused}
	for _, k := range findings.Codes {
		if !claimed[k.Code] && !slices.Contains(whatIfOnly, k.Code) {
			t.Errorf("no rule names %s: add it to the rule that finds it", k.Code)
		}
	}
}
