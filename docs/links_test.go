// Package docs holds the project's documents; its tests keep their links
// from pointing at files or sections that are gone, and the make commands
// they name to the Makefile's rules, each with one duration wherever one is
// stated (`make bench`'s is what BENCHMARKS.md measured).
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// documents are the Markdown files whose relative links must resolve,
// relative to this directory: the README, every document here, and the
// deployment guide and runbook, which link back into docs/.
func documents(t *testing.T) []string {
	here, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md", "../deploy/README.md", "../deploy/RUNBOOK.md"}, here...)
}

var (
	linkPattern   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchorPattern = regexp.MustCompile(`<a id="([^"]+)"`)
)

// TestLinksResolve: every relative link in the README and in docs/ names a
// file that exists and, after a #, a heading or an <a id> of that file, as
// GitHub spells their anchors.
func TestLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a
	}
	checked := 0
	for _, doc := range documents(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range prose(string(b)) {
			for _, m := range linkPattern.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, fragment, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: %v", doc, target, err)
					continue
				}
				if fragment == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s: link %s: an anchor in a file that is not Markdown", doc, target)
					continue
				}
				if !anchorsOf(path)[fragment] {
					t.Errorf("%s: link %s: %s has no heading or anchor #%s", doc, target, path, fragment)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the pattern no longer matches")
	}
}

// prose is text's lines outside fenced code blocks.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// headingAnchors is every anchor a link may name in a Markdown file: its
// headings as GitHub turns them into ids (lower case, punctuation dropped,
// spaces to hyphens, -1, -2 for repeats) and its explicit <a id>s.
func headingAnchors(text string) map[string]bool {
	a := map[string]bool{}
	for _, line := range prose(text) {
		for _, m := range anchorPattern.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if hashes == 0 || hashes > 6 || !strings.HasPrefix(line[hashes:], " ") {
			continue
		}
		var id strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(line[hashes:])) {
			switch {
			case r == ' ':
				id.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				id.WriteRune(r)
			}
		}
		slug := id.String()
		for n := 1; a[slug]; n++ {
			slug = id.String() + "-" + strconv.Itoa(n)
		}
		a[slug] = true
	}
	return a
}
