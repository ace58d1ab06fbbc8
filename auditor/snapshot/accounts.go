package snapshot

// AccountLabel is how the auditor names an account to people: by its id,
// and where it has a name of its own (operator mode: the name in its JWT)
// by that name with the id, its public key, beside it, since two accounts
// may share a name: "APP (ACXD4...)".
func AccountLabel(id, name string) string {
	if name == "" {
		return id
	}
	return name + " (" + id + ")"
}

// AccountNames maps the id of every account whose streams or consumers the
// audit saw, and that has a name of its own, to that name. JSZ gives an
// account's name beside its id; LEAFZ gives only the id (nats-server
// monitor.go Leafz: Account: acc.Name, which in operator mode is the
// account's public key), so this is where a leafnode link's account gets
// its name.
func AccountNames(snap *Snapshot) map[string]string {
	names := map[string]string{}
	if snap == nil {
		return names
	}
	for _, assets := range [][]Asset{snap.Streams, snap.Consumers} {
		for _, a := range assets {
			if a.AccountName != "" {
				names[a.Account] = a.AccountName
			}
		}
	}
	return names
}
