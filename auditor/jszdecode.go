package auditor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	json "github.com/segmentio/encoding/json"
)

// decodeJSZReply decodes a JSZ reply into the audit's projection (jszReply)
// in one pass over the bytes. A reply with configs runs to about 600 bytes
// per consumer, of which the audit reads some 40: names, leaders, peers,
// replica counts and required levels. A reflective decoder, even a fast one,
// looks up every key of every object in a map and copies every string it
// meets; this one compares the few keys it reads as bytes and steps over
// every other value without copying it. It still checks all of the reply:
// what is not JSON is an error, as it is for encoding/json, and so is a
// value of the wrong type where the audit reads one. Keys match as the
// servers spell them (encoding/json would also match other cases).
// TestDecodeJSZMatchesUnmarshal holds it against encoding/json on real
// replies of every server version (configs compare as the summaries the
// projection keeps of them), and TestDecodeConfigMatchesUnmarshal every
// config field by field.
func decodeJSZReply(data []byte) (*jszReply, error) {
	d := jszDecoder{scanner: scanner{b: data}, names: map[string]string{}, room: len(data) / minConsumerBytes}
	var r jszReply
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "data":
			if d.null() {
				r.Data = nil
				return nil
			}
			if r.Data == nil {
				r.Data = &jszData{}
			}
			return d.data(r.Data)
		case "error":
			if d.null() {
				r.Error = nil
				return nil
			}
			if r.Error == nil {
				r.Error = &apiError{}
			}
			return d.apiError(r.Error)
		}
		return d.skip()
	})
	if err == nil {
		err = d.end()
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

type jszDecoder struct {
	scanner
	// names interns the server and cluster names that every asset repeats:
	// a handful of strings instead of one per report.
	names  map[string]string
	recent [32]string
	// room is how many consumers the streams' counts may still reserve
	// room for: a reply cannot list more than it has bytes for, whatever
	// its counts say.
	room int
	// A slab the per-asset cluster infos come from: one allocation per
	// chunk instead of one per asset.
	clusters []clusterInfo
	// scratch is where each config is decoded before it is summarized.
	scratch jszConfig
}

func (d *jszDecoder) intern(b []byte) string {
	// A reply repeats a handful of names thousands of times: a slot picked
	// by length and last byte mostly holds the name already, found with one
	// comparison and no hashing.
	var slot *string
	if len(b) > 0 {
		slot = &d.recent[(len(b)*31+int(b[len(b)-1]))%len(d.recent)]
		if *slot == string(b) {
			return *slot
		}
	}
	s, ok := d.names[string(b)]
	if !ok {
		s = string(b)
		d.names[s] = s
	}
	if slot != nil {
		*slot = s
	}
	return s
}

const slab = 256

// minConsumerBytes is the least a consumer's entry takes in a reply
// (`{"name":""},`): the most consumers a reply can list is its length over
// it, and no more room than that is reserved from the counts it claims.
const minConsumerBytes = 12

func (d *jszDecoder) newCluster() *clusterInfo {
	if len(d.clusters) == 0 {
		d.clusters = make([]clusterInfo, slab)
	}
	c := &d.clusters[0]
	d.clusters = d.clusters[1:]
	return c
}

func (d *jszDecoder) data(js *jszData) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "meta_cluster":
			if d.null() {
				js.Meta = nil
				return nil
			}
			if js.Meta == nil {
				js.Meta = &metaClusterInfo{}
			}
			return d.meta(js.Meta)
		case "account_details":
			return list(d, &js.AccountDetails, d.account)
		case "total":
			return d.int(&js.Total)
		case "accounts":
			return d.int(&js.Accounts)
		}
		return d.skip()
	})
}

func (d *jszDecoder) meta(mc *metaClusterInfo) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "name":
			return d.name(&mc.Name)
		case "leader":
			return d.name(&mc.Leader)
		case "replicas":
			return d.replicas(&mc.Replicas)
		case "cluster_size":
			return d.int(&mc.Size)
		}
		return d.skip()
	})
}

func (d *jszDecoder) account(a *jszAccount) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "name":
			return d.str(&a.Name)
		case "id":
			return d.str(&a.ID)
		case "stream_detail":
			return list(d, &a.Streams, d.stream)
		}
		return d.skip()
	})
}

func (d *jszDecoder) stream(s *jszStream) error {
	// The stream's state, which the servers send before its consumers,
	// counts them: room for that many, not a list grown by doubling. Only
	// a hint: the state is not part of the projection, and whatever it
	// holds is no error.
	consumers := 0
	return d.object(func(key []byte) error {
		switch string(key) {
		case "state":
			d.ws()
			if d.i >= len(d.b) || d.b[d.i] != '{' {
				return d.skip()
			}
			return d.object(func(key []byte) error {
				if string(key) != "consumer_count" {
					return d.skip()
				}
				d.ws()
				start := d.i
				err := d.skip()
				if n, nerr := strconv.Atoi(string(d.b[start:d.i])); err == nil && nerr == nil {
					consumers = max(n, 0)
				}
				return err
			})
		case "name":
			return d.str(&s.Name)
		case "cluster":
			return d.cluster(&s.Cluster)
		case "config":
			cfg, err := d.config()
			if cfg != nil {
				s.Config.set(cfg)
			}
			return err
		case "consumer_detail":
			if n := min(consumers, d.room); s.Consumers == nil && n > 0 {
				s.Consumers, d.room = make([]jszConsumer, 0, n), d.room-n
			}
			return list(d, &s.Consumers, d.consumer)
		}
		return d.skip()
	})
}

func (d *jszDecoder) consumer(c *jszConsumer) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "name":
			return d.str(&c.Name)
		case "cluster":
			return d.cluster(&c.Cluster)
		case "config":
			cfg, err := d.config()
			if cfg != nil {
				c.Config.set(cfg)
			}
			return err
		}
		return d.skip()
	})
}

func (d *jszDecoder) cluster(p **clusterInfo) error {
	if d.null() {
		*p = nil
		return nil
	}
	if *p == nil {
		*p = d.newCluster()
	}
	ci := *p
	return d.object(func(key []byte) error {
		switch string(key) {
		case "leader":
			return d.name(&ci.Leader)
		case "replicas":
			return d.replicas(&ci.Replicas)
		}
		return d.skip()
	})
}

// replicas decodes a list of peers, of which the audit reads the names.
func (d *jszDecoder) replicas(p *[]*namedPeer) error {
	if d.null() {
		*p = nil
		return nil
	}
	*p = emptied(*p)
	return d.array(func() error {
		if d.null() {
			*p = append(*p, nil)
			return nil
		}
		np := &namedPeer{}
		*p = append(*p, np)
		return d.object(func(key []byte) error {
			if string(key) == "name" {
				return d.name(&np.Name)
			}
			return d.skip()
		})
	})
}

// config decodes a config into the decoder's scratch config, which it
// returns (nil for null), valid until the next config is decoded: the
// caller keeps its summary (set), as the summaries' UnmarshalJSON does. A
// second "config" key replaces the first one's summary (encoding/json
// would have merged two configs' fields into one): the servers send each
// key once.
func (d *jszDecoder) config() (*jszConfig, error) {
	if d.null() {
		return nil, nil
	}
	cfg := &d.scratch
	*cfg = jszConfig{}
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "num_replicas":
			return d.int(&cfg.Replicas)
		case "metadata":
			if d.null() {
				return nil
			}
			return d.object(func(key []byte) error {
				if string(key) == "_nats.req.level" {
					// A small number, the same on most configs of a reply
					// (2.11 on record one in every asset's metadata).
					return d.name(&cfg.Metadata.RequiredLevel)
				}
				return d.skip()
			})
		}
		return d.assetConfig(&cfg.AssetConfig, key)
	})
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// assetConfig decodes the value of key if it is one of AssetConfig's (what
// Features detect), and steps over it otherwise. The scalar fields, on
// every config, are read here; the rare structured ones (mirror, sources,
// priority groups) go to encoding's reflective decoder.
func (d *jszDecoder) assetConfig(c *AssetConfig, key []byte) error {
	switch string(key) {
	case "allow_msg_ttl":
		return d.bool(&c.AllowMsgTTL)
	case "subject_delete_marker_ttl":
		return d.int64(&c.SubjectDeleteMarkerTTL)
	case "allow_msg_counter":
		return d.bool(&c.AllowMsgCounter)
	case "allow_atomic":
		return d.bool(&c.AllowAtomicPublish)
	case "allow_msg_schedules":
		return d.bool(&c.AllowMsgSchedules)
	// The enumerations are interned: ack_policy is on every consumer.
	case "persist_mode":
		return d.name(&c.PersistMode)
	case "allow_batched":
		return d.bool(&c.AllowBatchPublish)
	case "ack_policy":
		return d.name(&c.AckPolicy)
	case "deliver_subject":
		return d.str(&c.DeliverSubject)
	case "pause_until":
		return d.str(&c.PauseUntil)
	case "priority_policy":
		return d.name(&c.PriorityPolicy)
	case "priority_timeout":
		return d.int64(&c.PinnedTTL)
	case "mirror":
		return d.reflect(&c.Mirror)
	case "sources":
		return d.reflect(&c.Sources)
	case "priority_groups":
		return d.reflect(&c.PriorityGroups)
	}
	return d.skip()
}

// reflect decodes the next value into v with the reflective decoder.
func (d *jszDecoder) reflect(v any) error {
	d.ws()
	start := d.i
	if err := d.skip(); err != nil {
		return err
	}
	if err := json.Unmarshal(d.b[start:d.i], v); err != nil {
		return fmt.Errorf("invalid JSON at offset %d: %w", start, err)
	}
	return nil
}

// bool decodes a boolean (null leaves it as it is).
func (d *jszDecoder) bool(p *bool) error {
	if d.null() {
		return nil
	}
	d.ws()
	switch {
	case bytes.HasPrefix(d.b[d.i:], []byte("true")):
		d.i += 4
		*p = true
	case bytes.HasPrefix(d.b[d.i:], []byte("false")):
		d.i += 5
		*p = false
	default:
		if err := d.skip(); err != nil {
			return err
		}
		return d.fail("expected a boolean")
	}
	return nil
}

// int64 decodes an integer (null leaves it as it is).
func (d *jszDecoder) int64(p *int64) error {
	if d.null() {
		return nil
	}
	d.ws()
	start := d.i
	if err := d.number(); err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	if err != nil {
		return d.failAt(start, "a number that is not an int64: %s", d.b[start:d.i])
	}
	*p = n
	return nil
}

func (d *jszDecoder) apiError(e *apiError) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "code":
			return d.int(&e.Code)
		case "err_code":
			var n int
			if err := d.int(&n); err != nil {
				return err
			}
			if n < 0 || n > 0xffff {
				return d.fail("err_code out of range")
			}
			e.ErrCode = uint16(n)
			return nil
		case "description":
			return d.str(&e.Description)
		}
		return d.skip()
	})
}

// list decodes an array into *p, each element with elem (null: nil).
func list[T any](d *jszDecoder, p *[]T, elem func(*T) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	*p = emptied(*p)
	return d.array(func() error {
		var zero T
		*p = append(*p, zero)
		return elem(&(*p)[len(*p)-1])
	})
}

// emptied is s with no elements and never nil, as encoding/json leaves a
// slice it decodes an array into.
func emptied[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s[:0]
}

// str decodes a string (null leaves it as it is).
func (d *jszDecoder) str(p *string) error {
	if d.null() {
		return nil
	}
	b, err := d.stringBytes()
	if err != nil {
		return err
	}
	*p = string(b)
	return nil
}

// name decodes a string that a reply repeats (a server or cluster name, an
// enumeration), interned.
func (d *jszDecoder) name(p *string) error {
	if d.null() {
		return nil
	}
	b, err := d.stringBytes()
	if err != nil {
		return err
	}
	*p = d.intern(b)
	return nil
}

// int decodes an integer (null leaves it as it is).
func (d *jszDecoder) int(p *int) error {
	if d.null() {
		return nil
	}
	d.ws()
	start := d.i
	if err := d.number(); err != nil {
		return err
	}
	n, err := strconv.Atoi(string(d.b[start:d.i]))
	if err != nil {
		return d.failAt(start, "a number that is not an int: %s", d.b[start:d.i])
	}
	*p = n
	return nil
}

// scanner walks JSON text, checking it as encoding/json's scanner does.
type scanner struct {
	b     []byte
	i     int
	depth int
	buf   []byte // unescaped string contents
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

func (s *scanner) fail(what string) error {
	return s.failAt(s.i, "%s", what)
}

func (s *scanner) failAt(at int, format string, a ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", at, fmt.Sprintf(format, a...))
}

var errEnd = errors.New("unexpected end of JSON input")

func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end checks that nothing but white space follows the value.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.fail("data after the top-level value")
	}
	return nil
}

// null consumes a null, if one comes next.
func (s *scanner) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object calls field for each key of an object; field must consume the value.
func (s *scanner) object(field func(key []byte) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errEnd
	}
	if s.b[s.i] != '{' {
		return s.fail("expected an object")
	}
	if s.depth++; s.depth > maxDepth {
		return s.fail("nested too deeply")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.ws()
		if s.i >= len(s.b) {
			return errEnd
		}
		if s.b[s.i] != '"' {
			return s.fail("expected a key")
		}
		key, err := s.stringBytes()
		if err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errEnd
		}
		if s.b[s.i] != ':' {
			return s.fail("expected ':'")
		}
		s.i++
		if err := field(key); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errEnd
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return nil
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

// array calls elem for each element of an array; elem must consume it.
func (s *scanner) array(elem func() error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errEnd
	}
	if s.b[s.i] != '[' {
		return s.fail("expected an array")
	}
	if s.depth++; s.depth > maxDepth {
		return s.fail("nested too deeply")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errEnd
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return nil
		default:
			return s.fail("expected ',' or ']'")
		}
	}
}

// skip steps over one value, checking it as encoding/json would. Most of a
// reply is stepped over (timestamps, states, most of every config), so
// this is one loop over the bytes with the index in a local and the open
// objects and arrays on a stack of its own, not a call per key and value.
func (s *scanner) skip() error {
	b, i := s.b, s.i
	var small [32]bool // true: an object is open; false: an array
	open := small[:0]
	fail := func(at int, what string) error {
		s.i = at
		if at >= len(b) {
			return errEnd
		}
		return s.fail(what)
	}
value:
	i = pastSpace(b, i)
	if i >= len(b) {
		return fail(i, "")
	}
	switch b[i] {
	case '{', '[':
		obj := b[i] == '{'
		if s.depth+len(open)+1 > maxDepth {
			return fail(i, "nested too deeply")
		}
		open = append(open, obj)
		i++
		i = pastSpace(b, i)
		if i < len(b) && (obj && b[i] == '}' || !obj && b[i] == ']') {
			i++
			open = open[:len(open)-1]
			goto after
		}
		if obj {
			goto key
		}
		goto value
	case '"':
		var err error
		if i, err = s.skipString(i); err != nil {
			return err
		}
	case 't', 'f', 'n':
		lit := "null"
		switch b[i] {
		case 't':
			lit = "true"
		case 'f':
			lit = "false"
		}
		s.i = i
		if err := s.literal(lit); err != nil {
			return err
		}
		i = s.i
	default:
		s.i = i
		if err := s.number(); err != nil {
			return err
		}
		i = s.i
	}
after:
	if len(open) == 0 {
		s.i = i
		return nil
	}
	i = pastSpace(b, i)
	if i >= len(b) {
		return fail(i, "")
	}
	switch c := b[i]; {
	case c == ',':
		i++
		if open[len(open)-1] {
			goto key
		}
		goto value
	case c == '}' && open[len(open)-1], c == ']' && !open[len(open)-1]:
		i++
		open = open[:len(open)-1]
		goto after
	case open[len(open)-1]:
		return fail(i, "expected ',' or '}'")
	default:
		return fail(i, "expected ',' or ']'")
	}
key:
	i = pastSpace(b, i)
	if i >= len(b) {
		return fail(i, "")
	}
	if b[i] != '"' {
		return fail(i, "expected a key")
	}
	{
		var err error
		if i, err = s.skipString(i); err != nil {
			return err
		}
	}
	i = pastSpace(b, i)
	if i >= len(b) {
		return fail(i, "")
	}
	if b[i] != ':' {
		return fail(i, "expected ':'")
	}
	i++
	goto value
}

// pastSpace is the index of the first byte from i on that is not white space.
func pastSpace(b []byte, i int) int {
	// The servers send no white space between tokens: one test, mostly.
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString checks the string that opens at b[i] and returns the index
// after it. Only its validity matters: escapes well formed, no control
// characters (invalid UTF-8 is no error; encoding/json replaces it).
func (s *scanner) skipString(i int) (int, error) {
	// Two thirds of a reply's bytes are inside strings, most of them
	// stepped over: eight bytes are tested at a time for a quote, a
	// backslash or a control character, by the carry tricks of "Bit
	// Twiddling Hacks", which mark the lowest such byte exactly (a mark
	// above it may be false, and is not read). The loop is written out
	// here: as a function of its own it is not inlined, and is slower.
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	b := s.b
	i++
	for {
		for i+8 <= len(b) {
			v := binary.LittleEndian.Uint64(b[i:])
			m := (v-lows*0x20)&^v | ((v^lows*'"')-lows)&^(v^lows*'"') | ((v^lows*'\\')-lows)&^(v^lows*'\\')
			if m &= highs; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				goto stop
			}
			i += 8
		}
		for i < len(b) && stringPlain[b[i]] {
			i++
		}
	stop:
		if i >= len(b) {
			s.i = i
			return i, errEnd
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			s.i = i
			return i, s.fail("control character in a string")
		}
		// A backslash.
		if i+1 >= len(b) {
			s.i = i
			return i, errEnd
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			s.i = i + 2
			if _, err := s.hex4(); err != nil {
				return s.i, err
			}
			i = s.i
		default:
			s.i = i + 2
			return i, s.fail("invalid escape in a string")
		}
	}
}

// stringPlain marks the bytes a string may hold as they are: all but a
// quote, a backslash and the control characters.
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		if len(s.b)-s.i < len(lit) && bytes.HasPrefix([]byte(lit), s.b[s.i:]) {
			return errEnd
		}
		return s.fail("invalid literal")
	}
	s.i += len(lit)
	return nil
}

// number steps over a number in JSON's grammar.
func (s *scanner) number() error {
	s.ws()
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return errEnd
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		digits()
	default:
		return s.failAt(start, "expected a value")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.endOr("expected a digit after the decimal point")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.endOr("expected a digit in the exponent")
		}
	}
	return nil
}

func (s *scanner) endOr(what string) error {
	if s.i >= len(s.b) {
		return errEnd
	}
	return s.fail(what)
}

// stringBytes reads a string and returns its contents, unescaped, with
// invalid UTF-8 replaced by U+FFFD as encoding/json does (valid until the
// next call).
func (s *scanner) stringBytes() ([]byte, error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, errEnd
	}
	if s.b[s.i] != '"' {
		return nil, s.fail("expected a string")
	}
	s.i++
	start := s.i
	// The common case: plain ASCII up to the closing quote, in one pass.
	b := s.b
	i := s.i
	for i < len(b) && plainASCII[b[i]] {
		i++
	}
	if i < len(b) && b[i] == '"' {
		s.i = i + 1
		return b[start:i], nil
	}
	s.i = i
	return s.escaped(start)
}

// plainASCII marks the bytes a string holds as they are: not a quote, a
// backslash, a control character or the start of a multi-byte character.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escaped reads the rest of a string, from s.i on, the slow way.
func (s *scanner) escaped(start int) ([]byte, error) {
	s.buf = append(s.buf[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.buf, nil
		case c < 0x20:
			return nil, s.fail("control character in a string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s.b[s.i:])
			s.buf = utf8.AppendRune(s.buf, r) // RuneError for a byte that is not UTF-8
			s.i += size
			continue
		case c != '\\':
			s.buf = append(s.buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return nil, errEnd
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			s.buf = append(s.buf, e)
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, err := s.hex4()
			if err != nil {
				return nil, err
			}
			if utf16.IsSurrogate(r) {
				// A pair decodes to one rune; a lone half to U+FFFD, as
				// encoding/json does.
				if bytes.HasPrefix(s.b[s.i:], []byte(`\u`)) {
					save := s.i
					s.i += 2
					r2, err := s.hex4()
					if err != nil {
						return nil, err
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
					} else {
						r, s.i = utf8.RuneError, save
					}
				} else {
					r = utf8.RuneError
				}
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			return nil, s.fail("invalid escape in a string")
		}
	}
	return nil, errEnd
}

func (s *scanner) hex4() (rune, error) {
	if s.i+4 > len(s.b) {
		return 0, errEnd
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, s.fail("invalid \\u escape")
		}
		r = r<<4 | rune(c)
	}
	s.i += 4
	return r, nil
}
