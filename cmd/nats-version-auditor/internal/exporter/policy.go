package exporter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// policyFile is the document --policy.file holds, in YAML or JSON:
//
//	floor: "2.14.0"
//
// floor is kept raw so that a number can be told from a string: YAML reads
// an unquoted 2.10 as the number 2.1, and a floor silently lowered to 2.1
// turns real CRITICALs into OK.
type policyFile struct {
	Floor json.RawMessage `json:"floor"`
}

// readPolicyFile reads and checks the policy in path. Every error names path.
func readPolicyFile(path string) (auditor.Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return auditor.Policy{}, fmt.Errorf("--policy.file: %w", err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return auditor.Policy{}, fmt.Errorf("--policy.file %s: not YAML or JSON: %w", path, err)
	}
	var pf policyFile
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		return auditor.Policy{}, fmt.Errorf("--policy.file %s: want a mapping with the one key floor: %w", path, err)
	}
	if len(pf.Floor) == 0 || string(pf.Floor) == "null" {
		return auditor.Policy{}, fmt.Errorf(`--policy.file %s: no floor (want e.g. floor: "2.14.0")`, path)
	}
	var floor string
	if err := json.Unmarshal(pf.Floor, &floor); err != nil {
		return auditor.Policy{}, fmt.Errorf(`--policy.file %s: floor must be a quoted string such as "2.14.0", not %s (YAML reads an unquoted 2.10 as the number 2.1)`, path, pf.Floor)
	}
	v, err := version.ParseFloor(floor)
	if err != nil {
		return auditor.Policy{}, fmt.Errorf("--policy.file %s: floor: %w", path, err)
	}
	return auditor.Policy{Floor: v}, nil
}

// PolicyFile is the policy serve audits against with --policy.file: the
// file's as it reads before each audit. A Kubernetes ConfigMap volume is
// updated by swapping a symlink, so the file is read by content every time
// rather than watched.
type PolicyFile struct {
	file   string
	logger *slog.Logger

	mu      sync.Mutex
	floor   version.Version // the floor last read, to log each change once
	lastErr string          // the last error logged, to log each once
}

// NewPolicyFile returns the policy of the file at path.
func NewPolicyFile(path string, logger *slog.Logger) *PolicyFile {
	return &PolicyFile{file: path, logger: logger}
}

// Current returns the policy for the next audit. An unreadable or invalid
// file is an error: the audit fails closed (UNKNOWN, up 0) rather than run
// against a floor nobody meant.
func (s *PolicyFile) Current() (auditor.Policy, error) {
	pol, err := readPolicyFile(s.file)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != s.lastErr {
			s.lastErr = msg
			s.logger.Error("cannot read the policy; audits fail until it can be read", "err", err)
		}
		return auditor.Policy{}, err
	}
	if s.lastErr != "" {
		s.logger.Info("policy readable again", "file", s.file)
		s.lastErr = ""
	}
	switch {
	case s.floor.IsZero():
		s.logger.Info("policy read", "file", s.file, "floor", pol.Floor)
	case pol.Floor != s.floor:
		s.logger.Info("policy floor changed", "file", s.file, "from", s.floor, "to", pol.Floor)
	}
	s.floor = pol.Floor
	return pol, nil
}
