package snapshot

import "testing"

// The pairs are from real replies (testdata/fuzz/FuzzJSZ): meta_cluster
// names its leader and gives its peer id, and so do meta replicas.
func TestPeerIDMatchesServers(t *testing.T) {
	for name, id := range map[string]string{"n3": "BXScrY9i", "n1": "fjFyEjc1"} {
		if got := PeerID(name); got != id {
			t.Errorf("peerID(%q) = %q, want %q", name, got, id)
		}
	}
	id, ok := UnknownPeerID("Server name unknown at this time (peerID: BXScrY9i)")
	if !ok || id != "BXScrY9i" {
		t.Errorf("unknownPeerID = %q, %v", id, ok)
	}
	if _, ok := UnknownPeerID("n3"); ok {
		t.Error("a plain name read as an unknown peer")
	}
}
