package client

import (
	"os"
	"strings"
	"testing"
)

// exampleDoc is the document whose "For application authors" example
// example_test.go repeats, relative to this package.
const exampleDoc = "../../docs/api.md"

// TestReadmeExampleCompiles holds the "For application authors" example of
// exampleDoc to example_test.go, which the compiler checks: every line of the
// document's snippet but its import, in order.
func TestReadmeExampleCompiles(t *testing.T) {
	readme, err := os.ReadFile(exampleDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## For application authors")
	if !ok {
		t.Fatalf("%s has no section ## For application authors", exampleDoc)
	}
	_, snippet, ok := strings.Cut(section, "```go\nimport \"github.com/natsaudit/nats-version-auditor/auditor/client\"\n")
	snippet, _, ok2 := strings.Cut(snippet, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no Go snippet importing the client")
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	rest := string(example)
	for _, line := range strings.Split(snippet, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		i := strings.Index(normalise(rest), line)
		if i < 0 {
			t.Fatalf("%s line %q is not in example_test.go (in order): keep the two the same", exampleDoc, line)
		}
		rest = normalise(rest)[i+len(line):]
	}
}

func normalise(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
