package clientdoc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/modroot"
)

// The document that shows application authors the client, from the
// module's root, and the heading of its section with the example.
const (
	clientDoc     = "docs/api.md"
	clientSection = "## For application authors"
)

// exampleFile is the client's example, which the client module's tests
// compile.
const exampleFile = "auditor/client/example_test.go"

// TestReadmeExampleCompiles holds the example of clientDoc's section to
// exampleFile, which the compiler checks: every line of the document's
// snippet but its import, in order.
func TestReadmeExampleCompiles(t *testing.T) {
	root, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, clientDoc))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n"+clientSection)
	if !ok {
		t.Fatalf("%s has no section %s", clientDoc, clientSection)
	}
	_, snippet, ok := strings.Cut(section, "```go\nimport \"github.com/natsaudit/nats-version-auditor/auditor/client\"\n")
	snippet, _, ok2 := strings.Cut(snippet, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no Go snippet importing the client")
	}
	example, err := os.ReadFile(filepath.Join(root, exampleFile))
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
			t.Fatalf("%s line %q is not in %s (in order): keep the two the same", clientDoc, line, exampleFile)
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
