package rulefile

import (
	"slices"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
)

func TestFindingCodes(t *testing.T) {
	codes := func(ks []findings.CodeInfo) []findings.Code {
		var out []findings.Code
		for _, k := range ks {
			out = append(out, k.Code)
		}
		return out
	}
	tests := []struct {
		expr               string
		selected, excluded []findings.Code
	}{
		// Narrowed to the SOURCING_ and CONSUMER_ codes, so that a code
		// registered elsewhere does not change what this expects.
		{`sum by (code) (nats_version_auditor_findings{severity="CRITICAL", code=~"SOURCING_.*|CONSUMER_.*", code!~"CONSUMER_.*"}) > 0`,
			[]findings.Code{findings.SourcingResetUnanswered, findings.SourcingResetCrashesFollower},
			[]findings.Code{findings.ConsumerLeaderBelowFloor, findings.ConsumerReplicaBelowFloor}},
		{`nats_version_auditor_findings{code="SERVER_MISSING"} > 0`, []findings.Code{findings.ServerMissing}, nil},
		{`nats_version_auditor_findings{severity="UNKNOWN", code!="AUDIT_INCOMPLETE", namespace="x"}`,
			[]findings.Code{findings.ServerMissing, findings.VersionUnparseable, findings.APILevelUnknown}, []findings.Code{findings.AuditIncomplete}},
		{`max(nats_version_auditor_server_missing) > 0`, nil, nil},
	}
	for _, tc := range tests {
		selected, excluded, err := FindingCodes(tc.expr)
		if err != nil || !slices.Equal(codes(selected), tc.selected) || !slices.Equal(codes(excluded), tc.excluded) {
			t.Errorf("%s: %v %v (%v), want %v %v", tc.expr, codes(selected), codes(excluded), err, tc.selected, tc.excluded)
		}
	}
	if _, _, err := FindingCodes(`sum(`); err == nil {
		t.Error("a broken expression parsed")
	}
}
