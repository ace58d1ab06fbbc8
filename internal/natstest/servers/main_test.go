package main

import (
	"slices"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func TestChosen(t *testing.T) {
	all, err := chosen(nil)
	if err != nil || !slices.Equal(all, slices.Concat(natstest.Versions, natstest.Pinned)) {
		t.Errorf("no names: %v, %v; want every version the tests use", all, err)
	}
	some, err := chosen([]string{natstest.Floor, natstest.Old})
	if err != nil || !slices.Equal(some, []string{natstest.Floor, natstest.Old}) {
		t.Errorf("two names: %v, %v; want those two", some, err)
	}
	if _, err := chosen([]string{natstest.Floor, "2.12.15"}); err == nil {
		t.Error(`"2.12.15" is taken: the versions are spelled as their tags, v2.12.15`)
	}
}
