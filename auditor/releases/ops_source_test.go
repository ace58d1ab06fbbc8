package releases

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"golang.org/x/mod/semver"
)

// baseOps are the entry ops every release from 2.10 on knows, with the
// group whose apply function handles each (2.10.27 jetstream_cluster.go:87-116).
// deleteRangeOp (15) is there too, for catchups only: its row in
// ReplicatedOps judges it as a RAFT entry.
var baseOps = map[EntryOp]struct {
	name  string
	group string
}{
	0: {"assignStreamOp", "meta"}, 1: {"assignConsumerOp", "meta"}, 2: {"removeStreamOp", "meta"}, 3: {"removeConsumerOp", "meta"},
	4: {"streamMsgOp", "stream"}, 5: {"purgeStreamOp", "stream"}, 6: {"deleteMsgOp", "stream"},
	7: {"updateDeliveredOp", "consumer"}, 8: {"updateAcksOp", "consumer"},
	9: {"assignCompressedConsumerOp", "meta"}, 10: {"updateSkipOp", "consumer"}, 11: {"updateStreamOp", "meta"},
	12: {"addPendingRequest", "consumer"}, 13: {"removePendingRequest", "consumer"},
	14: {"compressedStreamMsgOp", "stream"},
}

// applyFuncs are the functions that apply each group's committed entries.
// 2.15 moved the consumer switch into applyConsumerMsgOpLocked.
var applyFuncs = map[string][]string{
	"meta":     {"applyMetaEntries"},
	"stream":   {"applyStreamEntries"},
	"consumer": {"applyConsumerEntries", "applyConsumerMsgOpLocked"},
}

// enumValue is how the table judges one value of a config enum: Feature
// names the row of Features that detects it; otherwise Note says why no
// release that has the field is hurt by it.
type enumValue struct {
	Feature string
	Note    string
	// Removed is the first release that no longer accepts the value.
	Removed version.Version
}

// configEnum is a config field whose type nats-server decodes with its own
// UnmarshalJSON switch: a value an older release's switch does not know
// makes it fail to decode the whole asset (Features' priority_prioritized
// and ack_flow_control rows).
type configEnum struct {
	Type  string // the Go type in nats-server's server package
	Field string // its JSON name in StreamConfig or ConsumerConfig
	Kind  AssetKind
	// Since is the first release with the type; zero: 2.10 or earlier.
	Since  version.Version
	Values map[string]enumValue
}

const since210 = "known to every release the audit judges (2.10.27 store.go)"

var configEnums = []configEnum{
	{Type: "RetentionPolicy", Field: "retention", Kind: KindStream, Values: map[string]enumValue{
		"limits": {Note: since210}, "interest": {Note: since210}, "workqueue": {Note: since210}}},
	{Type: "DiscardPolicy", Field: "discard", Kind: KindStream, Values: map[string]enumValue{
		"old": {Note: since210}, "new": {Note: since210}}},
	{Type: "StorageType", Field: "storage", Kind: KindStream, Values: map[string]enumValue{
		"memory": {Note: since210}, "file": {Note: since210},
		"any": {Note: "no stream can be created with it (2.10.27 store.go:544)", Removed: v212}}},
	{Type: "StoreCompression", Field: "compression", Kind: KindStream, Values: map[string]enumValue{
		"none": {Note: "2.10.0 brought the field; older releases are not judged"}, "s2": {Note: "2.10.0 brought the field"}}},
	{Type: "PersistModeType", Field: "persist_mode", Kind: KindStream, Since: v212, Values: map[string]enumValue{
		"default": {Note: "the default, as no field"}, "": {Note: "the default, as no field"},
		"async": {Feature: "async_persist"}}},
	{Type: "AckPolicy", Field: "ack_policy", Kind: KindConsumer, Values: map[string]enumValue{
		"none": {Note: since210}, "all": {Note: since210}, "explicit": {Note: since210},
		"flow_control": {Feature: "ack_flow_control"}}},
	{Type: "DeliverPolicy", Field: "deliver_policy", Kind: KindConsumer, Values: map[string]enumValue{
		"all": {Note: since210}, "undefined": {Note: since210}, "last": {Note: since210}, "last_per_subject": {Note: since210},
		"new": {Note: since210}, "by_start_sequence": {Note: since210}, "by_start_time": {Note: since210}}},
	{Type: "ReplayPolicy", Field: "replay_policy", Kind: KindConsumer, Values: map[string]enumValue{
		"instant": {Note: since210}, "original": {Note: since210}}},
	{Type: "PriorityPolicy", Field: "priority_policy", Kind: KindConsumer, Since: v211, Values: map[string]enumValue{
		"none":     {Note: "the default, as no field"},
		"overflow": {Feature: "priority_groups"}, "pinned_client": {Feature: "priority_groups"},
		"prioritized": {Feature: "priority_prioritized"}}},
}

// configStructs are the config types whose JSON fields an asset's
// assignment carries, with the file that declares each, the first release
// that has it (zero: 2.10.27 or earlier), and the fields every release
// from then on has. checkConfigFields fails on a struct-typed field of one
// of them whose type is not listed here: a nested config it would not read.
var configStructs = []struct {
	Type, File string
	Since      version.Version
	Base       []string
}{
	{"StreamConfig", "stream.go", version.Version{}, []string{"name", "description", "subjects", "retention", "max_consumers", "max_msgs", "max_bytes",
		"max_age", "max_msgs_per_subject", "max_msg_size", "discard", "storage", "num_replicas", "no_ack", "duplicate_window",
		"placement", "mirror", "sources", "compression", "first_seq", "subject_transform", "republish", "allow_direct",
		"mirror_direct", "discard_new_per_subject", "sealed", "deny_delete", "deny_purge", "allow_rollup_hdrs",
		"consumer_limits", "metadata", "template_owner"}},
	{"ConsumerConfig", "consumer.go", version.Version{}, []string{"durable_name", "name", "description", "deliver_policy", "opt_start_seq",
		"opt_start_time", "ack_policy", "ack_wait", "max_deliver", "backoff", "filter_subject", "filter_subjects",
		"replay_policy", "rate_limit_bps", "sample_freq", "max_waiting", "max_ack_pending", "flow_control",
		"idle_heartbeat", "headers_only", "max_batch", "max_expires", "max_bytes", "inactive_threshold",
		"num_replicas", "mem_storage", "direct", "deliver_subject", "deliver_group", "metadata"}},
	// Mirror and sources.
	{"StreamSource", "stream.go", version.Version{}, []string{"name", "opt_start_seq", "opt_start_time", "filter_subject", "subject_transforms", "external"}},
	{"ExternalStream", "stream.go", version.Version{}, []string{"api", "deliver"}},
	{"StreamConsumerSource", "stream.go", v214, []string{"name", "deliver_subject"}},
	{"SubjectTransformConfig", "stream.go", version.Version{}, []string{"src", "dest"}},
	{"RePublish", "stream.go", version.Version{}, []string{"src", "dest", "headers_only"}},
	{"StreamConsumerLimits", "stream.go", version.Version{}, []string{"inactive_threshold", "max_ack_pending"}},
	{"Placement", "jetstream_cluster.go", version.Version{}, []string{"cluster", "tags"}},
}

// configField is how the tables judge a config field that came after
// 2.10: Feature names the row of Features that detects it in Sample (a
// config holding it); otherwise Note says why no peer is hurt by it.
type configField struct {
	Type, Field    string
	Since, Removed version.Version
	Feature        string
	Kind           AssetKind
	Sample         string
	Note           string
}

var configFields = []configField{
	{Type: "StreamConfig", Field: "allow_msg_ttl", Since: v211, Feature: "msg_ttl", Kind: KindStream, Sample: `{"allow_msg_ttl":true}`},
	{Type: "StreamConfig", Field: "subject_delete_marker_ttl", Since: v211, Feature: "delete_marker_ttl", Kind: KindStream, Sample: `{"subject_delete_marker_ttl":1000000000}`},
	{Type: "StreamConfig", Field: "allow_msg_counter", Since: v212, Feature: "msg_counter", Kind: KindStream, Sample: `{"allow_msg_counter":true}`},
	{Type: "StreamConfig", Field: "allow_atomic", Since: v212, Feature: "atomic_batch", Kind: KindStream, Sample: `{"allow_atomic":true}`},
	{Type: "StreamConfig", Field: "allow_msg_schedules", Since: v212, Feature: "msg_schedules", Kind: KindStream, Sample: `{"allow_msg_schedules":true}`},
	{Type: "StreamConfig", Field: "persist_mode", Since: v212, Feature: "async_persist", Kind: KindStream, Sample: `{"persist_mode":"async"}`},
	{Type: "StreamConfig", Field: "allow_batched", Since: v214, Feature: "fast_batch", Kind: KindStream, Sample: `{"allow_batched":true}`},
	{Type: "StreamConfig", Field: "template_owner", Removed: v214,
		Note: "stream templates were removed in 2.14.0; a 2.14 server sets it on no asset"},
	{Type: "ConsumerConfig", Field: "pause_until", Since: v211, Feature: "pause", Kind: KindConsumer, Sample: `{"pause_until":"2030-01-01T00:00:00Z"}`},
	{Type: "ConsumerConfig", Field: "priority_groups", Since: v211, Feature: "priority_groups", Kind: KindConsumer, Sample: `{"priority_groups":["g"]}`},
	{Type: "ConsumerConfig", Field: "priority_policy", Since: v211, Feature: "priority_groups", Kind: KindConsumer, Sample: `{"priority_policy":"overflow"}`},
	{Type: "ConsumerConfig", Field: "priority_timeout", Since: v211, Feature: "priority_groups", Kind: KindConsumer, Sample: `{"priority_timeout":1000}`},
	// Set by a mirror's or source's create of its consumer (2.14.0
	// stream.go:3491, :3919), which in a cluster over a non-limits origin
	// becomes a replicated durable (jetstream_cluster.go:9198-9207), and by
	// any client that sets it.
	{Type: "ConsumerConfig", Field: "sourcing", Since: v214, Feature: "consumer_sourcing", Kind: KindConsumer, Sample: `{"sourcing":true}`},
	{Type: "StreamSource", Field: "consumer", Since: v214, Feature: "durable_sourcing", Kind: KindStream, Sample: `{"mirror":{"name":"O","consumer":{"name":"d"}}}`},
	{Type: "Placement", Field: "preferred", Since: v211,
		Note: "a placement hint read only when the asset is placed or its leader moves; 2.10 drops it (lenient decode), and every strict decoder (2.11.9 on) knows it"},
}

// TestOpTablesAgainstSource reads, in the nats-server source at every tag
// the tables name and at the newest tags the module proxy serves: every
// entryOp constant of the server package, the apply switches of each group
// and what their default and the group's monitor do with an op they have
// no case for, the flag checks around the proposals (checkProposals), the
// feature flags and their defaults, the values of the config enums, the
// fields of the configs and of the structs nested in them, and the mapping
// functions subject transforms take (checkMappingFunctions). It fails on
// any the tables do not judge, or judge otherwise: the next release's new
// op, flag, field or value shows up here before it shows up as a crash.
func TestOpTablesAgainstSource(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads nats-server sources")
	}
	for _, f := range Features {
		if f.Name == "" {
			t.Fatal("a feature without a name")
		}
	}
	for _, e := range configEnums {
		for v, j := range e.Values {
			if j.Feature == "" {
				continue
			}
			var c AssetConfig
			raw, _ := json.Marshal(map[string]string{e.Field: v})
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			if !DetectFeatures(e.Kind, &c).Has(j.Feature) {
				t.Errorf("%s %q: the table says feature %s judges it, but DetectFeatures does not see it", e.Field, v, j.Feature)
			}
		}
	}
	for _, f := range configFields {
		if f.Feature == "" {
			if f.Note == "" {
				t.Errorf("%s %s: neither a feature nor a note", f.Type, f.Field)
			}
			continue
		}
		var c AssetConfig
		if err := json.Unmarshal([]byte(f.Sample), &c); err != nil {
			t.Fatal(err)
		}
		if !DetectFeatures(f.Kind, &c).Has(f.Feature) {
			t.Errorf("%s %s: the table says feature %s judges it, but DetectFeatures does not see it in %s", f.Type, f.Field, f.Feature, f.Sample)
		}
		if got := featureByName(t, f.Feature).Since; got != f.Since {
			t.Errorf("%s %s came in %s, its feature %s in %s", f.Type, f.Field, f.Since, f.Feature, got)
		}
	}
	tags := tablesTags()
	tags = append(tags, newestTags(t)...)
	slices.SortFunc(tags, semver.Compare)
	tags = slices.Compact(tags)
	t.Logf("reading nats-server at %s", strings.Join(tags, ", "))
	for _, tag := range tags {
		t.Run(tag, func(t *testing.T) {
			dir := filepath.Join(moduleSource(t, tag), "server")
			checkOps(t, tag, dir)
			checkSnapshots(t, tag, dir)
			checkFlags(t, tag, dir)
			checkEnums(t, tag, dir)
			checkConfigFields(t, tag, dir)
			checkDecoder(t, tag, dir)
			checkVotes(t, tag, dir)
			checkProposals(t, tag, dir)
			checkMappingFunctions(t, tag, dir)
		})
	}
}

// tablesTags are the releases the tables name: every range's bounds and
// the tags the level table was read at.
func tablesTags() []string {
	var tags []string
	add := func(vs ...version.Version) {
		for _, v := range vs {
			if !v.IsZero() {
				tags = append(tags, "v"+v.String())
			}
		}
	}
	for _, o := range ReplicatedOps {
		add(o.Since)
		for _, h := range o.Older {
			add(h.From, h.Below)
		}
		for _, p := range o.Proposed {
			add(p.Since)
		}
	}
	for _, f := range FeatureFlags {
		for _, d := range f.Defaults {
			add(d.From, d.Below)
		}
	}
	for _, f := range Features {
		add(f.Since)
		for _, h := range f.Older {
			add(h.From, h.Below)
		}
	}
	for _, e := range configEnums {
		add(e.Since)
	}
	for _, f := range configFields {
		add(f.Since, f.Removed)
	}
	for _, r := range levelRanges {
		add(r.First, r.Last)
		add(r.Checked...)
	}
	for _, h := range UndecodableValue {
		add(h.From, h.Below)
	}
	for _, r := range memberVotes {
		add(r.From, r.Below)
	}
	for _, m := range mappingFunctions {
		add(m.Engine, m.Check)
	}
	add(FeatureFlagsSince, v215)
	tags = append(tags, mappingChecked...)
	tags = append(tags, votesChecked...)
	return append(tags, decoderChecked...)
}

// newestTags are what the module proxy serves newest: @latest, and the
// newest release of each line its version list holds (the list leaves
// some older releases out, so it is no inventory of every tag).
func newestTags(t *testing.T) []string {
	t.Helper()
	const mod = "github.com/nats-io/nats-server/v2"
	run := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				out = append(out, ee.Stderr...)
			}
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var latest struct{ Version string }
	if err := json.Unmarshal(run("list", "-m", "-json", mod+"@latest"), &latest); err != nil || latest.Version == "" {
		t.Fatalf("go list %s@latest: %v", mod, err)
	}
	out := []string{latest.Version}
	newest := map[string]string{}
	for _, v := range strings.Fields(string(run("list", "-m", "-versions", mod))) {
		if !semver.IsValid(v) || semver.Prerelease(v) != "" || semver.Compare(v, "v2.10.0") < 0 {
			continue
		}
		if line := semver.MajorMinor(v); semver.Compare(v, newest[line]) > 0 {
			newest[line] = v
		}
	}
	for _, v := range newest {
		out = append(out, v)
	}
	return out
}

// parseServerFile parses one file of the server package at a tag; nil when
// the tag has no such file.
func parseServerFile(t *testing.T, dir, name string) *ast.File {
	t.Helper()
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// applySwitch is what one group's apply functions do with entry ops.
type applySwitch struct {
	handled map[string]bool
	// unknown is what the default branch of the op switch does
	// (defaultAction); "" when it has none.
	unknown string
}

func checkOps(t *testing.T, tag, dir string) {
	f := parseServerFile(t, dir, "jetstream_cluster.go")
	if f == nil {
		t.Fatalf("%s has no server/jetstream_cluster.go", tag)
	}
	ops := entryOpConsts(t, tag, dir)
	if len(ops) == 0 {
		t.Fatalf("%s: no constant of type entryOp in server/", tag)
	}
	names := map[string]bool{}
	for _, n := range ops {
		names[n] = true
	}
	groups := map[string]applySwitch{}
	for g, fns := range applyFuncs {
		groups[g] = readApply(f, fns, names)
		if len(groups[g].handled) == 0 {
			t.Fatalf("%s: no apply switch for the %s group in %v", tag, g, fns)
		}
	}
	v := version.Must(tag)
	// What an op a group has no case for does, as the source says: the
	// default branch, and for an error what the group's monitor does with it.
	monitors := map[string]bool{
		"meta":     applyErrorHaltsMeta(mustFuncBody(t, tag, "jetstream_cluster.go", f, "monitorCluster")),
		"stream":   applyErrorHaltsStream(mustFuncBody(t, tag, "jetstream_cluster.go", f, "monitorStream")),
		"consumer": applyErrorHaltsConsumer(mustFuncBody(t, tag, "jetstream_cluster.go", f, "monitorConsumer")),
	}
	unknown := map[string]Outcome{}
	for g, sw := range groups {
		unknown[g] = unknownOpInSource(g, sw.unknown, monitors[g])
	}
	want := map[string]OpHandling{"meta": unknownMetaOp(v), "stream": UnknownOpOutcome(v), "consumer": UnknownOpOutcome(v)}
	for g, h := range want {
		if unknown[g] != h.Apply {
			t.Errorf("%s: the %s apply switch's default %s, and its monitor sets a write error on an apply error: %t; the table says an unknown op %s (%s)",
				tag, g, groups[g].unknown, monitors[g], h.Apply, h.Evidence)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		name := ops[op]
		row, inTable := OpByValue(op)
		base, isBase := baseOps[op]
		switch {
		case inTable && row.GoName != name:
			t.Errorf("%s: op %d is %s, the table's row %s says %s", tag, op, name, row.Name, row.GoName)
		case !inTable && !isBase:
			t.Errorf("%s brings entry op %d (%s), which the table (ReplicatedOps) does not judge", tag, op, name)
		case !inTable && base.name != name:
			t.Errorf("%s: op %d is %s, not %s", tag, op, name, base.name)
		case !inTable && !groups[base.group].handled[name]:
			t.Errorf("%s: op %d (%s) is not applied by the %s group, which every release was taken to do", tag, op, name, base.group)
		}
	}
	for _, row := range ReplicatedOps {
		if row.Snapshot != 0 {
			continue // checkSnapshots
		}
		h := row.HandlingBy(v)
		g := string(row.Kind)
		applied := groups[g].handled[row.GoName]
		switch {
		case applied && h.Apply != Supported:
			t.Errorf("%s applies %s in the %s group; the table says %s (%s)", tag, row.GoName, row.Kind, h.Apply, h.Evidence)
		case !applied && h.Apply == Supported:
			t.Errorf("%s does not apply %s in the %s group; the table says it does (%s)", tag, row.GoName, row.Kind, h.Evidence)
		case !applied && h.Apply != unknown[g]:
			t.Errorf("%s: %s reaches the %s group's default branch (%s: %q in the source); the table says %s (%s)",
				tag, row.GoName, g, groups[g].unknown, unknown[g], h.Apply, h.Evidence)
		}
	}
}

// unknownOpInSource is the outcome of an op that reaches the default
// branch of a group's apply switch, which does action (defaultAction);
// halts is whether the group's monitor sets a write error on an apply
// error. "" is an outcome the tables have no name for: a default that
// ignores the op, or an error the monitor logs and applies past.
func unknownOpInSource(group, action string, halts bool) Outcome {
	switch {
	case action == defaultPanics:
		return CrashesOnApply
	case action != defaultErrors:
		return ""
	case halts && group == "meta":
		return HaltsMeta
	case halts:
		return HaltsReplica
	case group == "stream":
		// Applied past, the next entry's sequence does not follow the
		// store's and the replica resets (as checkSnapshots reads it).
		return ResetsReplica
	}
	return ""
}

// entryOpConsts reads every constant of type entryOp in the server package
// at tag, in whichever file declares it, by value.
func entryOpConsts(t *testing.T, tag, dir string) map[EntryOp]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[EntryOp]string{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "entryOp") {
			continue // spares parsing the package's other hundred files
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range entryOpsOf(f) {
			if v < 0 || v > 255 {
				t.Errorf("%s: %s: entry op %s is %d, not a byte", tag, filepath.Base(path), name, v)
				continue
			}
			if other, dup := out[EntryOp(v)]; dup {
				t.Errorf("%s: entry ops %s and %s are both %d", tag, other, name, v)
			}
			out[EntryOp(v)] = name
		}
	}
	return out
}

// entryOpsOf lists a file's constants of type entryOp and their values:
// typed by the spec or by a conversion, with iota and the repetition of a
// block's last expression counted as the compiler counts them. One whose
// value it cannot work out is -1, which no byte is.
func entryOpsOf(f *ast.File) map[string]int {
	out := map[string]int{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		var typ ast.Expr
		var values []ast.Expr
		for iota, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Values) > 0 {
				typ, values = vs.Type, vs.Values
			}
			for i, n := range vs.Names {
				if n.Name == "_" || i >= len(values) || !isEntryOpType(typ, values[i]) {
					continue
				}
				v, ok := constInt(values[i], iota)
				if !ok {
					v = -1
				}
				out[n.Name] = v
			}
		}
	}
	return out
}

// isEntryOpType: a constant declared as entryOp, or converted to it.
func isEntryOpType(typ, value ast.Expr) bool {
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name == "entryOp"
	}
	if c, ok := value.(*ast.CallExpr); ok && typ == nil {
		id, ok := c.Fun.(*ast.Ident)
		return ok && id.Name == "entryOp"
	}
	return false
}

// constInt evaluates the integer constant expressions entry ops are
// written in: literals, iota, sums and differences, and conversions.
func constInt(e ast.Expr, iota int) (int, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.INT {
			v, err := strconv.ParseInt(e.Value, 0, 64)
			return int(v), err == nil
		}
	case *ast.Ident:
		if e.Name == "iota" {
			return iota, true
		}
	case *ast.ParenExpr:
		return constInt(e.X, iota)
	case *ast.CallExpr:
		if len(e.Args) == 1 {
			return constInt(e.Args[0], iota)
		}
	case *ast.BinaryExpr:
		x, okx := constInt(e.X, iota)
		y, oky := constInt(e.Y, iota)
		switch {
		case !okx || !oky:
		case e.Op == token.ADD:
			return x + y, true
		case e.Op == token.SUB:
			return x - y, true
		}
	}
	return 0, false
}

// readApply reads the named functions: the ops they compare an entry's op
// with (the batch handling ahead of the stream switch) or name in a case,
// and what the default of an op switch does.
func readApply(f *ast.File, fns []string, ops map[string]bool) applySwitch {
	out := applySwitch{handled: map[string]bool{}}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || !slices.Contains(fns, fd.Name.Name) {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.EQL {
					for _, e := range []ast.Expr{n.X, n.Y} {
						if id, ok := e.(*ast.Ident); ok && ops[id.Name] {
							out.handled[id.Name] = true
						}
					}
				}
			case *ast.SwitchStmt:
				var def *ast.CaseClause
				opSwitch := false
				for _, s := range n.Body.List {
					cc := s.(*ast.CaseClause)
					if cc.List == nil {
						def = cc
					}
					for _, e := range cc.List {
						if id, ok := e.(*ast.Ident); ok && ops[id.Name] {
							out.handled[id.Name] = true
							opSwitch = true
						}
					}
				}
				if opSwitch && def != nil {
					out.unknown = defaultAction(def)
				}
			}
			return true
		})
	}
	return out
}

// What the default branch of an op switch does (defaultAction).
const (
	defaultPanics  = "panics"
	defaultErrors  = "returns an error"
	defaultIgnores = "returns no error"
	defaultNothing = "neither panics nor returns"
)

// defaultAction says what a default branch does first: panic, return an
// error, or return with a nil error (or nothing), which drops the op as if
// it were applied. A function literal in the branch is not its own code.
func defaultAction(cc *ast.CaseClause) string {
	action := ""
	for _, s := range cc.Body {
		ast.Inspect(s, func(n ast.Node) bool {
			if action != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "panic" {
					action = defaultPanics
				}
			case *ast.ReturnStmt:
				action = defaultErrors
				if len(n.Results) == 0 {
					action = defaultIgnores
				} else if id, ok := n.Results[len(n.Results)-1].(*ast.Ident); ok && id.Name == "nil" {
					action = defaultIgnores
				}
			}
			return true
		})
	}
	if action == "" {
		return defaultNothing
	}
	return action
}

func checkFlags(t *testing.T, tag, dir string) {
	opts, err := os.ReadFile(filepath.Join(dir, "opts.go"))
	if err != nil {
		t.Fatal(err)
	}
	reads := strings.Contains(string(opts), `case "feature_flags"`)
	if want := version.Must(tag).AtLeast(FeatureFlagsSince); reads != want {
		t.Errorf("%s: opts.go reads feature_flags: %t; FeatureFlagsSince %s says %t", tag, reads, FeatureFlagsSince, want)
	}
	f := parseServerFile(t, dir, "feature_flags.go")
	src := map[string]bool{}
	if f != nil {
		consts := stringConsts(f)
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "featureFlags" || len(vs.Values) != 1 {
				return true
			}
			lit, ok := vs.Values[0].(*ast.CompositeLit)
			if !ok {
				return true
			}
			found = true
			for _, e := range lit.Elts {
				kv := e.(*ast.KeyValueExpr)
				name := exprString(kv.Key, consts)
				on, _ := kv.Value.(*ast.Ident)
				if on == nil || (on.Name != "true" && on.Name != "false") {
					t.Errorf("%s: flag %s has default %T", tag, name, kv.Value)
					continue
				}
				src[name] = on.Name == "true"
			}
			return false
		})
		if !found {
			t.Fatalf("%s: no featureFlags map in feature_flags.go", tag)
		}
	}
	for name, on := range src {
		flag, ok := FlagByName(name)
		if !ok {
			t.Errorf("%s brings feature flag %s (default %t), which the flag table does not judge", tag, name, on)
			continue
		}
		if d, known := flag.DefaultBy(version.Must(tag)); !known || d.On != on {
			t.Errorf("%s: flag %s defaults to %t; the table says %t (known: %t, %s)", tag, name, on, d.On, known, d.Evidence)
		}
	}
	for _, flag := range FeatureFlags {
		if _, known := flag.DefaultBy(version.Must(tag)); known {
			if _, ok := src[flag.Name]; !ok {
				t.Errorf("%s has no flag %s; the table says it has", tag, flag.Name)
			}
		}
	}
}

func checkEnums(t *testing.T, tag, dir string) {
	var files []*ast.File
	consts := map[string]string{}
	for _, name := range []string{"store.go", "consumer.go", "filestore.go", "stream.go"} {
		if f := parseServerFile(t, dir, name); f != nil {
			files = append(files, f)
			for k, v := range stringConsts(f) {
				consts[k] = v
			}
		}
	}
	for _, e := range configEnums {
		values, ok := unmarshalCases(files, e.Type, consts)
		exists := version.Must(tag).AtLeast(e.Since)
		if ok != exists {
			t.Errorf("%s: %s.UnmarshalJSON found: %t; the table says the type exists from %q", tag, e.Type, ok, e.Since)
			continue
		}
		for _, v := range values {
			j, judged := e.Values[v]
			if !judged {
				t.Errorf("%s brings %s value %q (%s), which the tables do not judge", tag, e.Field, v, e.Type)
				continue
			}
			if !j.Removed.IsZero() && version.Must(tag).AtLeast(j.Removed) {
				t.Errorf("%s accepts %s %q; the table says %s removed it", tag, e.Field, v, j.Removed)
			}
		}
		if !ok {
			continue
		}
		for v, j := range e.Values {
			present := slices.Contains(values, v)
			want := j.Removed.IsZero() || version.Must(tag).Before(j.Removed)
			if j.Feature != "" {
				f := featureByName(t, j.Feature)
				want = version.Must(tag).AtLeast(f.Since)
			}
			if present != want {
				t.Errorf("%s: %s %q accepted: %t; the table says %t", tag, e.Field, v, present, want)
			}
		}
	}
}

// checkConfigFields fails on a field of a config type that no release
// from 2.10.27 had and the tables do not judge, on a field the tables
// judge that is missing at or after its release (or present before it, or
// after its removal), and on a nested config struct the test does not read.
func checkConfigFields(t *testing.T, tag, dir string) {
	v := version.Must(tag)
	files := map[string]*ast.File{}
	structs := map[string]bool{} // every struct type the files declare
	for _, cs := range configStructs {
		if _, ok := files[cs.File]; !ok {
			f := parseServerFile(t, dir, cs.File)
			files[cs.File] = f
			for name := range structTypes(f) {
				structs[name] = true
			}
		}
	}
	listed := map[string]bool{}
	for _, cs := range configStructs {
		listed[cs.Type] = true
	}
	for _, cs := range configStructs {
		fields, ok := structJSONFields(files[cs.File], cs.Type)
		if exists := v.AtLeast(cs.Since); ok != exists {
			t.Errorf("%s: type %s in %s: %t; the test says it exists from %q", tag, cs.Type, cs.File, ok, cs.Since)
			continue
		} else if !ok {
			continue
		}
		present := map[string]bool{}
		for _, fld := range fields {
			present[fld.name] = true
			if typ := fld.typ; structs[typ] && !listed[typ] {
				t.Errorf("%s: %s %q is a %s, a config struct configStructs does not list: its fields go unread", tag, cs.Type, fld.name, typ)
			}
			if slices.Contains(cs.Base, fld.name) {
				continue
			}
			if !slices.ContainsFunc(configFields, func(f configField) bool { return f.Type == cs.Type && f.Field == fld.name }) {
				t.Errorf("%s brings %s field %q, which the tables do not judge", tag, cs.Type, fld.name)
			}
		}
		for _, f := range configFields {
			if f.Type != cs.Type {
				continue
			}
			want := v.AtLeast(f.Since) && (f.Removed.IsZero() || v.Before(f.Removed))
			if present[f.Field] != want {
				t.Errorf("%s: %s %q present: %t; the tables say it is there from %q until %q", tag, cs.Type, f.Field, present[f.Field], f.Since, f.Removed)
			}
		}
		for _, name := range cs.Base {
			if slices.ContainsFunc(configFields, func(f configField) bool { return f.Type == cs.Type && f.Field == name }) {
				continue // judged above, with its removal
			}
			if !present[name] {
				t.Errorf("%s: %s has no %q, which the test takes every release to have", tag, cs.Type, name)
			}
		}
	}
}

// structTypes lists the struct types a file declares.
func structTypes(f *ast.File) map[string]bool {
	out := map[string]bool{}
	if f == nil {
		return out
	}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
			for _, s := range gd.Specs {
				if ts := s.(*ast.TypeSpec); ts != nil {
					if _, ok := ts.Type.(*ast.StructType); ok {
						out[ts.Name.Name] = true
					}
				}
			}
		}
	}
	return out
}

// jsonField is one field of a struct as encoding/json writes it: its JSON
// name, and the name of its type with pointers, slices and maps taken off
// ("" for a type from another package).
type jsonField struct{ name, typ string }

// elemTypeName is the named type a field's type holds: *T, []T, []*T,
// map[K]T all give T; a type from another package gives "".
func elemTypeName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ArrayType:
			e = x.Elt
		case *ast.MapType:
			e = x.Value
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// structJSONFields lists the JSON fields of a struct type.
func structJSONFields(f *ast.File, typ string) ([]jsonField, bool) {
	if f == nil {
		return nil, false
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok || ts.Name.Name != typ {
				continue
			}
			var out []jsonField
			for _, fld := range st.Fields.List {
				name := "<embedded>"
				if len(fld.Names) == 1 {
					if !fld.Names[0].IsExported() {
						continue // encoding/json leaves it out
					}
					name = fld.Names[0].Name
				}
				if fld.Tag != nil {
					tag, _ := strconv.Unquote(fld.Tag.Value)
					if j, ok := reflect.StructTag(tag).Lookup("json"); ok {
						name, _, _ = strings.Cut(j, ",")
					}
				}
				if name != "-" {
					out = append(out, jsonField{name, elemTypeName(fld.Type)})
				}
			}
			return out, true
		}
	}
	return nil, false
}

func featureByName(t *testing.T, name string) Feature {
	t.Helper()
	for _, f := range Features {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no feature %s", name)
	return Feature{}
}

// unmarshalCases lists the JSON values the switch of (*typ).UnmarshalJSON
// accepts, without their quotes.
func unmarshalCases(files []*ast.File, typ string, consts map[string]string) ([]string, bool) {
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "UnmarshalJSON" || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			if id, ok := star.X.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			var values []string
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if cc, ok := n.(*ast.CaseClause); ok {
					for _, e := range cc.List {
						values = append(values, strings.Trim(exprString(e, consts), `"`))
					}
				}
				return true
			})
			return values, true
		}
	}
	return nil, false
}

// stringConsts maps the file's string constants to their values.
func stringConsts(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return out
}

// exprString is a string literal's or a string constant's value; an
// expression it cannot resolve is written as "<unresolved ...>", which no
// table holds.
func exprString(e ast.Expr, consts map[string]string) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if s, err := strconv.Unquote(e.Value); err == nil {
			return s
		}
	case *ast.Ident:
		if s, ok := consts[e.Name]; ok {
			return s
		}
		return "<unresolved " + e.Name + ">"
	}
	return "<unresolved expression>"
}

// decoderChecked are the last releases before each bound of
// undecodableValue, read beside the bounds themselves.
var decoderChecked = []string{"v2.12.4", "v2.14.9", "v2.15.2"}

// checkDecoder reads what the release at tag does with an assignment whose
// config it cannot decode, and holds undecodableValue to it: decodeConfig
// (held offline), else a meta apply error that monitorCluster turns into a
// meta write error (halts the meta group), else a decode failure the meta
// snapshot panics on (crashes), else none of these (not loaded).
func checkDecoder(t *testing.T, tag, dir string) {
	t.Helper()
	var got Outcome
	if funcBody(parseServerFile(t, dir, "jetstream_versioning.go"), "decodeConfig") != nil {
		got = HeldOffline
	} else {
		f := parseServerFile(t, dir, "jetstream_cluster.go")
		switch {
		case applyErrorHaltsMeta(mustFuncBody(t, tag, "jetstream_cluster.go", f, "monitorCluster")):
			got = HaltsMeta
		case decodeFailurePanics(f):
			got = CrashesOnDecode
		default:
			got = NotLoaded
		}
	}
	v := version.Must(strings.TrimPrefix(tag, "v"))
	if want := UndecodableValueBy(v).Asset; got != want {
		t.Errorf("%s: an undecodable config value is %s in the source, %s in undecodableValue", tag, got, want)
	}
}

// votesChecked are the last releases before each bound of memberVotes
// (the module proxy serves no 2.12.13), where checkVotes must find no check.
var votesChecked = []string{"v2.12.12", "v2.14.3"}

// checkVotes holds MemberVotesOnly to the source: a candidate that counts
// only its peers' votes asks shouldCountVoteFromPeer (nats-server #8353).
func checkVotes(t *testing.T, tag, dir string) {
	t.Helper()
	body := mustFuncBody(t, tag, "raft.go", parseServerFile(t, dir, "raft.go"), "runAsCandidate")
	got := callsNamed(body, "shouldCountVoteFromPeer")
	if want := MemberVotesOnly(version.Must(strings.TrimPrefix(tag, "v"))); got != want {
		t.Errorf("%s: a candidate counts only its peers' votes: %v in the source, %v in memberVotes", tag, got, want)
	}
}

// funcBody returns the body of the function or method named name; nil when
// there is none, or no file.
func funcBody(f *ast.File, name string) *ast.BlockStmt {
	if f == nil {
		return nil
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name {
			return fd.Body
		}
	}
	return nil
}

// mustFuncBody is funcBody for a function a check cannot do without: a
// release that renamed or moved it, or has no such file, fails the test by
// name instead of panicking.
func mustFuncBody(t *testing.T, tag, file string, f *ast.File, name string) *ast.BlockStmt {
	t.Helper()
	body := funcBody(f, name)
	if body == nil {
		t.Fatalf("%s: %s has no %s", tag, file, name)
	}
	return body
}

// callsNamed reports whether n calls a function or method named name.
func callsNamed(n ast.Node, name string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			switch fn := c.Fun.(type) {
			case *ast.Ident:
				found = found || fn.Name == name
			case *ast.SelectorExpr:
				found = found || fn.Sel.Name == name
			}
		}
		return !found
	})
	return found
}

// applyErrorHaltsMeta: monitorCluster's branch (body is its body) for an
// error from applyMetaEntries sets a meta write error.
func applyErrorHaltsMeta(body *ast.BlockStmt) bool {
	halts := false
	ast.Inspect(body, func(n ast.Node) bool {
		if is, ok := n.(*ast.IfStmt); ok && is.Init != nil && is.Else != nil && callsNamed(is.Init, "applyMetaEntries") {
			halts = halts || callsNamed(is.Else, "setMetaWriteErr")
		}
		return !halts
	})
	return halts
}

// applyErrorHaltsConsumer: monitorConsumer's branches (body is its body)
// for an error from applyConsumerEntries set a write error on the
// consumer, which makes the replica an observer; without one the monitor
// logs the error and applies on.
func applyErrorHaltsConsumer(body *ast.BlockStmt) bool {
	halts := false
	ast.Inspect(body, func(n ast.Node) bool {
		is, ok := n.(*ast.IfStmt)
		if !ok || is.Init == nil || !callsNamed(is.Init, "applyConsumerEntries") {
			return !halts
		}
		for e := is.Else; e != nil; {
			switch b := e.(type) {
			case *ast.IfStmt:
				halts = halts || callsNamed(b.Body, "setWriteErr")
				e = b.Else
			case *ast.BlockStmt:
				halts = halts || callsNamed(b, "setWriteErr")
				e = nil
			}
		}
		return !halts
	})
	return halts
}

// decodeFailurePanics: some function decodes a stream assignment and
// panics when that fails (the meta snapshot's re-decoding, from 2.12.5).
func decodeFailurePanics(f *ast.File) bool {
	panics := false
	ast.Inspect(f, func(n ast.Node) bool {
		var list []ast.Stmt
		switch b := n.(type) {
		case *ast.BlockStmt:
			list = b.List
		case *ast.CaseClause:
			list = b.Body
		}
		for i, st := range list {
			if i+1 < len(list) && callsNamed(st, "decodeStreamAssignment") {
				if is, ok := list[i+1].(*ast.IfStmt); ok && callsNamed(is.Body, "panic") {
					panics = true
				}
			}
		}
		return !panics
	})
	return panics
}

// streamStateVersions are the stream state encoding versions the release
// whose store.go is f accepts in both IsEncodedStreamState and
// DecodeStreamState: streamStateVersion (1) always, and a version whose
// constant both functions name.
func streamStateVersions(t *testing.T, tag string, f *ast.File) map[StreamStateVersion]string {
	t.Helper()
	out := map[StreamStateVersion]string{}
	is, dec := mustFuncBody(t, tag, "store.go", f, "IsEncodedStreamState"), mustFuncBody(t, tag, "store.go", f, "DecodeStreamState")
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "streamStateVersion") {
			return true
		}
		name := vs.Names[0].Name
		// uint8(N)
		if c, ok := vs.Values[0].(*ast.CallExpr); ok && len(c.Args) == 1 {
			if lit, ok := c.Args[0].(*ast.BasicLit); ok && namesIdent(is, name) && namesIdent(dec, name) {
				if v, err := strconv.Atoi(lit.Value); err == nil {
					out[StreamStateVersion(v)] = name
				}
			}
		}
		return true
	})
	return out
}

// namesIdent reports whether n names the identifier name.
func namesIdent(n ast.Node, name string) bool {
	found := false
	if n == nil {
		return false
	}
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			found = true
		}
		return !found
	})
	return found
}

// applyErrorHaltsStream: the last branch of monitorStream's handling of an
// error from applyStreamEntries (after the cluster-reset and out-of-space
// errors) sets a write error on the stream, which makes the replica an
// observer; without it the monitor applies on. body is monitorStream's.
func applyErrorHaltsStream(body *ast.BlockStmt) bool {
	halts := false
	ast.Inspect(body, func(n ast.Node) bool {
		is, ok := n.(*ast.IfStmt)
		if !ok || !callsNamed(is.Cond, "isClusterResetErr") {
			return !halts
		}
		for is != nil {
			switch e := is.Else.(type) {
			case *ast.IfStmt:
				is = e
				continue
			case *ast.BlockStmt:
				halts = halts || callsNamed(e, "setWriteErr")
			}
			is = nil
		}
		return !halts
	})
	return halts
}

// checkSnapshots reads, at tag, which stream state encodings a follower
// accepts (store.go), what monitorStream does with the error of one it
// does not, and whether a leader encodes its snapshot by a feature flag
// (stateSnapshotLocked), and holds the snapshot rows of ReplicatedOps to
// them.
func checkSnapshots(t *testing.T, tag, dir string) {
	t.Helper()
	store := parseServerFile(t, dir, "store.go")
	cluster := parseServerFile(t, dir, "jetstream_cluster.go")
	if store == nil || cluster == nil {
		t.Fatalf("%s has no server/store.go or jetstream_cluster.go", tag)
	}
	accepted := streamStateVersions(t, tag, store)
	if accepted[1] != "streamStateVersion" {
		t.Errorf("%s: the stream state encoding version 1 is %q, not streamStateVersion", tag, accepted[1])
	}
	v := version.Must(strings.TrimPrefix(tag, "v"))
	rows := map[StreamStateVersion]ReplicatedOp{}
	for _, row := range ReplicatedOps {
		if row.Snapshot != 0 {
			rows[row.Snapshot] = row
		}
	}
	for ver, name := range accepted {
		if row, ok := rows[ver]; ok && row.GoName != name {
			t.Errorf("%s: stream state encoding %d is %s, the table's row %s says %s", tag, ver, name, row.Name, row.GoName)
		} else if !ok && ver != 1 {
			t.Errorf("%s accepts stream state encoding %d (%s), which the table (ReplicatedOps) does not judge", tag, ver, name)
		}
	}
	halts := applyErrorHaltsStream(mustFuncBody(t, tag, "jetstream_cluster.go", cluster, "monitorStream"))
	snap := funcBody(cluster, "stateSnapshotLocked")
	for ver, row := range rows {
		h := row.HandlingBy(v)
		_, accepts := accepted[ver]
		want := ResetsReplica
		if halts {
			want = HaltsReplica
		}
		switch {
		case accepts && h.Apply != Supported:
			t.Errorf("%s accepts stream state encoding %d; the table says %s (%s)", tag, ver, h.Apply, h.Evidence)
		case !accepts && h.Apply != want:
			t.Errorf("%s rejects stream state encoding %d and its stream monitor %s; the table says %s (%s)",
				tag, ver, map[bool]string{true: "sets a write error", false: "applies on"}[halts], h.Apply, h.Evidence)
		}
		for _, p := range row.Proposed {
			flagged := snap != nil && namesIdent(snap, flagConstName(p.Flag))
			if sends := !v.Before(p.Since); sends != flagged {
				t.Errorf("%s: stateSnapshotLocked reads %s: %t; the table says a leader sends encoding %d from %s", tag, p.Flag, flagged, ver, p.Since)
			}
		}
	}
}

// flagConstName is the Go constant of a feature flag in nats-server's
// feature_flags.go: js_snapshot_sources is FeatureFlagJsSnapshotSources.
func flagConstName(flag string) string {
	var b strings.Builder
	b.WriteString("FeatureFlag")
	for _, part := range strings.Split(flag, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
