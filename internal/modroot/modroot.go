// Package modroot finds the module's root directory, for the tests, the
// test harness and the generators under deploy/, which all run somewhere
// below it.
package modroot

import (
	"errors"
	"os"
	"path/filepath"
)

// Dir walks up from the working directory to the directory holding go.mod.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
