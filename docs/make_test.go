package docs

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// makeDocuments are the documents whose `make` commands must be the Makefile's: the README,
// every document here, the deployment guide and runbook, and BENCHMARKS.md, which times them.
func makeDocuments(t *testing.T) []string {
	return append(documents(t), "../BENCHMARKS.md")
}

var (
	// makeCommand is a command that runs make: environment assignments, then make and its
	// first target.
	makeCommand = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*make\s+([a-z][a-z0-9_-]*)`)
	inlineCode  = regexp.MustCompile("`([^`\n]+)`")
	// aboutDuration is how the documents and the Makefile state how long a target takes.
	aboutDuration = regexp.MustCompile(`\babout (\d+(?: to \d+)?)\s+#?\s*(minutes|seconds)\b`)
	// proseDuration is a duration stated right after an inline `make TARGET`.
	proseDuration = regexp.MustCompile(`^\s*(?:takes\s+)?\(?about (\d+(?: to \d+)?) (minutes|seconds)\b`)
	makeRule      = regexp.MustCompile(`^([a-z][a-z0-9_-]*)\s*:([^=]|$)`)
)

// makeMention is one place a document names a make target, and the duration it states there.
type makeMention struct {
	where, target, duration string
}

// makeMentions finds every make command of doc: inline code in its prose, and the lines of its
// fenced blocks, with the duration the prose after it, or the line's comment, states.
func makeMentions(doc, text string) []makeMention {
	var out []makeMention
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		where := doc + ":" + strconv.Itoa(i+1)
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			cmd, comment, _ := strings.Cut(strings.TrimSpace(line), "#")
			if m := makeCommand.FindStringSubmatch(strings.TrimSpace(cmd)); m != nil {
				mention := makeMention{where: where, target: m[1]}
				if d := aboutDuration.FindStringSubmatch(comment); d != nil {
					mention.duration = d[1] + " " + d[2]
				}
				out = append(out, mention)
			}
			continue
		}
		for _, loc := range inlineCode.FindAllStringSubmatchIndex(line, -1) {
			m := makeCommand.FindStringSubmatch(line[loc[2]:loc[3]])
			if m == nil {
				continue
			}
			mention := makeMention{where: where, target: m[1]}
			if d := proseDuration.FindStringSubmatch(line[loc[1]:]); d != nil {
				mention.duration = d[1] + " " + d[2]
			}
			out = append(out, mention)
		}
	}
	return out
}

// makefileTargets reads the Makefile's rules and, where the comment above a rule states one, how
// long it takes.
func makefileTargets(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{}
	var comment []string
	for _, line := range strings.Split(string(b), "\n") {
		if c, ok := strings.CutPrefix(line, "#"); ok {
			comment = append(comment, strings.TrimSpace(c))
			continue
		}
		if m := makeRule.FindStringSubmatch(line); m != nil {
			targets[m[1]] = ""
			if d := aboutDuration.FindStringSubmatch(strings.Join(comment, " ")); d != nil {
				targets[m[1]] = d[1] + " " + d[2]
			}
		}
		comment = nil
	}
	return targets
}

// TestMakeTargetsAreTheMakefiles: every `make TARGET` the README and the documents name is a
// rule of the Makefile, and every duration stated for a target (in a document, or in the
// comment above its rule) is the same wherever it is stated.
func TestMakeTargetsAreTheMakefiles(t *testing.T) {
	targets := makefileTargets(t)
	for _, want := range []string{"build", "demo", "test", "bench"} {
		if _, ok := targets[want]; !ok {
			t.Fatalf("the Makefile's rules %v lack %s: the pattern no longer reads them", slices.Sorted(maps.Keys(targets)), want)
		}
	}
	stated := map[string][]makeMention{}
	for target, d := range targets {
		if d != "" {
			stated[target] = append(stated[target], makeMention{where: "../Makefile", target: target, duration: d})
		}
	}
	found := 0
	for _, doc := range makeDocuments(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range makeMentions(doc, string(b)) {
			found++
			if _, ok := targets[m.target]; !ok {
				t.Errorf("%s: `make %s` is no rule of the Makefile", m.where, m.target)
			}
			if m.duration != "" {
				stated[m.target] = append(stated[m.target], m)
			}
		}
	}
	if found == 0 {
		t.Fatal("no make commands found: the patterns no longer match")
	}
	if len(stated["bench"]) < 3 {
		t.Errorf("make bench's duration is stated in %v, want the Makefile, BENCHMARKS.md and performance.md", stated["bench"])
	}
	for target, ms := range stated {
		t.Logf("make %s: %+v", target, ms)
		for _, m := range ms[1:] {
			if m.duration != ms[0].duration {
				t.Errorf("make %s takes about %s in %s, about %s in %s", target, m.duration, m.where, ms[0].duration, ms[0].where)
			}
		}
	}
}
