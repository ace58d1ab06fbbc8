// Package rendertest holds what the tests of the documents and of the
// commands that print them check of every JSON document.
package rendertest

import (
	"encoding/json"
	"fmt"
	"sort"
)

// nullable are the JSON fields documented as null when there is nothing to
// say: every other null in a document is a list a consumer cannot range over.
var nullable = map[string]bool{"floor_met_at_step": true, "min_api_level": true}

// UnexpectedNulls returns the paths of the nulls in the JSON doc that are
// not of a nullable field.
func UnexpectedNulls(doc []byte) []string {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if e == nil && !nullable[k] {
					out = append(out, path+"."+k)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", v)
	sort.Strings(out)
	return out
}
