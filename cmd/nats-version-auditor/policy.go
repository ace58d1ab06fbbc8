package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path"
	"sync"

	"github.com/alecthomas/kingpin/v2"
	"sigs.k8s.io/yaml"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// policyFlags are the flags that choose what an audit is held against.
type policyFlags struct {
	floor                        string
	accounts, streams, consumers []string
}

func addFloorFlag(cmd *kingpin.CmdClause, p *policyFlags) *kingpin.FlagClause {
	f := cmd.Flag("floor", "Oldest acceptable nats-server version (2.14, 2.14.0 or v2.14.0)").Default(auditor.Display(auditor.DefaultFloor))
	f.StringVar(&p.floor)
	return f
}

// addAssetFilterFlags adds the globs that narrow the asset findings to a
// gate's own assets.
func addAssetFilterFlags(cmd *kingpin.CmdClause, p *policyFlags) {
	cmd.Flag("account", "Only report asset findings of accounts whose name or (operator mode) public key matches this glob (repeatable)").StringsVar(&p.accounts)
	cmd.Flag("stream", "Only report asset findings of streams matching this glob (repeatable)").StringsVar(&p.streams)
	cmd.Flag("consumer", "Only report consumer findings of consumers matching this glob (repeatable)").StringsVar(&p.consumers)
}

func (p *policyFlags) policy() (auditor.Policy, error) {
	floor, err := auditor.ParseFloor(p.floor)
	if err != nil {
		return auditor.Policy{}, fmt.Errorf("--floor: %w", err)
	}
	for _, f := range []struct {
		flag     string
		patterns []string
	}{{"--account", p.accounts}, {"--stream", p.streams}, {"--consumer", p.consumers}} {
		for _, pat := range f.patterns {
			// path.Match reports a malformed pattern only when it gets that
			// far; a pattern that can never match would narrow the gate to nothing.
			if _, err := path.Match(pat, ""); err != nil {
				return auditor.Policy{}, fmt.Errorf("%s %q: not a glob pattern: %w", f.flag, pat, err)
			}
		}
	}
	return auditor.Policy{Floor: floor, Accounts: p.accounts, Streams: p.streams, Consumers: p.consumers}, nil
}

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
	v, err := auditor.ParseFloor(floor)
	if err != nil {
		return auditor.Policy{}, fmt.Errorf("--policy.file %s: floor: %w", path, err)
	}
	return auditor.Policy{Floor: v}, nil
}

// policySource is the policy serve audits against: the --floor flag's, or,
// with --policy.file, the file's as it reads before each audit. A
// Kubernetes ConfigMap volume is updated by swapping a symlink, so the file
// is read by content every time rather than watched.
type policySource struct {
	file   string
	fixed  auditor.Policy
	logger *slog.Logger

	mu      sync.Mutex
	floor   string // the floor last read, to log each change once
	lastErr string // the last error logged, to log each once
}

// newPolicySource returns the policy source the serve flags ask for.
// --floor and --policy.file are exclusive: a floor set in two places is a
// floor someone forgets to change in one of them.
func newPolicySource(p *policyFlags, floorSet bool, file string, logger *slog.Logger) (*policySource, error) {
	if file == "" {
		pol, err := p.policy()
		if err != nil {
			return nil, err
		}
		return &policySource{fixed: pol, logger: logger}, nil
	}
	if floorSet {
		return nil, fmt.Errorf("--floor and --policy.file both set: give the floor in one place (the file, to change it without a restart)")
	}
	return &policySource{file: file, logger: logger}, nil
}

// Current returns the policy for the next audit. With --policy.file, an
// unreadable or invalid file is an error: the audit fails closed (UNKNOWN,
// up 0) rather than run against a floor nobody meant.
func (s *policySource) Current() (auditor.Policy, error) {
	if s.file == "" {
		return s.fixed, nil
	}
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
	case s.floor == "":
		s.logger.Info("policy read", "file", s.file, "floor", auditor.Display(pol.Floor))
	case pol.Floor != s.floor:
		s.logger.Info("policy floor changed", "file", s.file, "from", auditor.Display(s.floor), "to", auditor.Display(pol.Floor))
	}
	s.floor = pol.Floor
	return pol, nil
}
