// Package jsonscan walks JSON text in one pass without reflection, for a
// decoder that reads a few keys of a large document and steps over the rest.
//
// A Scanner checks all of the text it walks, as encoding/json does: what is
// not JSON is an error, and so is a value of the wrong type where the caller
// reads one. It does not copy what it steps over, and it interns the strings
// a document repeats (Name). The caller supplies the schema: Object calls it
// with each key and Array with each element, and it reads the value with one
// of the typed readers or steps over it with Skip.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner walks one JSON text. The zero value walks an empty text; New
// makes one for a text.
type Scanner struct {
	b     []byte
	i     int
	depth int
	buf   []byte // unescaped string contents
	// names interns the strings Name reads; recent is a direct-mapped
	// cache in front of it.
	names  map[string]string
	recent [32]string
}

// New returns a Scanner at the start of b.
func New(b []byte) Scanner {
	return Scanner{b: b}
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

var errEnd = errors.New("unexpected end of JSON input")

// Offset is the index in the text of the next byte the Scanner reads.
func (s *Scanner) Offset() int { return s.i }

// Fail returns an error naming what was wrong at the Scanner's offset.
func (s *Scanner) Fail(what string) error {
	return s.failAt(s.i, "%s", what)
}

func (s *Scanner) failAt(at int, format string, a ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", at, fmt.Sprintf(format, a...))
}

func (s *Scanner) ws() {
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

// Peek returns the first byte of the next value, past white space, without
// consuming it: '{', '[', '"', a digit, '-', 't', 'f' or 'n' in a valid
// text, and 0 at the end of the text.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// End checks that nothing but white space follows the value.
func (s *Scanner) End() error {
	s.ws()
	if s.i != len(s.b) {
		return s.Fail("data after the top-level value")
	}
	return nil
}

// Null consumes a null, if one comes next.
func (s *Scanner) Null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// Object calls field for each key of an object; field must consume the
// value (with a reader, Skip or Raw). The key is valid until the next
// string is read.
func (s *Scanner) Object(field func(key []byte) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errEnd
	}
	if s.b[s.i] != '{' {
		return s.Fail("expected an object")
	}
	if s.depth++; s.depth > maxDepth {
		return s.Fail("nested too deeply")
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
			return s.Fail("expected a key")
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
			return s.Fail("expected ':'")
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
			return s.Fail("expected ',' or '}'")
		}
	}
}

// Array calls elem for each element of an array; elem must consume it.
func (s *Scanner) Array(elem func() error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errEnd
	}
	if s.b[s.i] != '[' {
		return s.Fail("expected an array")
	}
	if s.depth++; s.depth > maxDepth {
		return s.Fail("nested too deeply")
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
			return s.Fail("expected ',' or ']'")
		}
	}
}

// List decodes an array into *p, each element with elem, and null into nil.
// An empty array leaves *p empty and not nil, as encoding/json does.
func List[T any](s *Scanner, p *[]T, elem func(*T) error) error {
	if s.Null() {
		*p = nil
		return nil
	}
	if *p == nil {
		*p = []T{}
	} else {
		*p = (*p)[:0]
	}
	return s.Array(func() error {
		var zero T
		*p = append(*p, zero)
		return elem(&(*p)[len(*p)-1])
	})
}

// Raw steps over the next value, checking it, and returns its text.
func (s *Scanner) Raw() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// Bool decodes a boolean (null leaves *p as it is).
func (s *Scanner) Bool(p *bool) error {
	if s.Null() {
		return nil
	}
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		*p = true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		*p = false
	default:
		if err := s.Skip(); err != nil {
			return err
		}
		return s.Fail("expected a boolean")
	}
	return nil
}

// Int decodes an integer (null leaves *p as it is).
func (s *Scanner) Int(p *int) error {
	if s.Null() {
		return nil
	}
	s.ws()
	start := s.i
	if err := s.number(); err != nil {
		return err
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return s.failAt(start, "a number that is not an int: %s", s.b[start:s.i])
	}
	*p = n
	return nil
}

// Int64 decodes an integer (null leaves *p as it is).
func (s *Scanner) Int64(p *int64) error {
	if s.Null() {
		return nil
	}
	s.ws()
	start := s.i
	if err := s.number(); err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		return s.failAt(start, "a number that is not an int64: %s", s.b[start:s.i])
	}
	*p = n
	return nil
}

// Text decodes a string into a string of its own (null leaves *p as it is).
func (s *Scanner) Text(p *string) error {
	if s.Null() {
		return nil
	}
	b, err := s.stringBytes()
	if err != nil {
		return err
	}
	*p = string(b)
	return nil
}

// Name decodes a string that the text repeats (a server's name, an
// enumeration), interned: each distinct value is one string for the
// Scanner's life (null leaves *p as it is).
func (s *Scanner) Name(p *string) error {
	if s.Null() {
		return nil
	}
	b, err := s.stringBytes()
	if err != nil {
		return err
	}
	if s.names == nil {
		s.names = map[string]string{}
	}
	*p = s.intern(b)
	return nil
}

func (s *Scanner) intern(b []byte) string {
	// A document repeats a handful of names thousands of times: a slot
	// picked by length and last byte mostly holds the name already, found
	// with one comparison and no hashing.
	var slot *string
	if len(b) > 0 {
		slot = &s.recent[(len(b)*31+int(b[len(b)-1]))%len(s.recent)]
		if *slot == string(b) {
			return *slot
		}
	}
	str, ok := s.names[string(b)]
	if !ok {
		str = string(b)
		s.names[str] = str
	}
	if slot != nil {
		*slot = str
	}
	return str
}

// Skip steps over one value, checking it as encoding/json would. Most of a
// large document read for a few keys is stepped over, so this is one loop
// over the bytes with the index in a local and the open objects and arrays
// on a stack of its own, not a call per key and value.
func (s *Scanner) Skip() error {
	b, i := s.b, s.i
	var small [32]bool // true: an object is open; false: an array
	open := small[:0]
	fail := func(at int, what string) error {
		s.i = at
		if at >= len(b) {
			return errEnd
		}
		return s.Fail(what)
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
	// Machine-written JSON (the NATS servers') has no white space between
	// tokens: one test, mostly.
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
func (s *Scanner) skipString(i int) (int, error) {
	// In the documents this was written for (the NATS servers' JSZ
	// replies) most bytes are inside strings, and most strings are stepped
	// over: eight bytes are tested at a time for a quote, a backslash or a
	// control character, by the carry tricks of "Bit Twiddling Hacks",
	// which mark the lowest such byte exactly (a mark above it may be
	// false, and is not read). The loop is written out here: as a function
	// of its own it is not inlined, and is slower.
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
			return i, s.Fail("control character in a string")
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
			return i, s.Fail("invalid escape in a string")
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

func (s *Scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		if len(s.b)-s.i < len(lit) && bytes.HasPrefix([]byte(lit), s.b[s.i:]) {
			return errEnd
		}
		return s.Fail("invalid literal")
	}
	s.i += len(lit)
	return nil
}

// number steps over a number in JSON's grammar.
func (s *Scanner) number() error {
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

func (s *Scanner) endOr(what string) error {
	if s.i >= len(s.b) {
		return errEnd
	}
	return s.Fail(what)
}

// stringBytes reads a string and returns its contents, unescaped, with
// invalid UTF-8 replaced by U+FFFD as encoding/json does (valid until the
// next call).
func (s *Scanner) stringBytes() ([]byte, error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, errEnd
	}
	if s.b[s.i] != '"' {
		return nil, s.Fail("expected a string")
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
func (s *Scanner) escaped(start int) ([]byte, error) {
	s.buf = append(s.buf[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.buf, nil
		case c < 0x20:
			return nil, s.Fail("control character in a string")
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
			return nil, s.Fail("invalid escape in a string")
		}
	}
	return nil, errEnd
}

func (s *Scanner) hex4() (rune, error) {
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
			return 0, s.Fail("invalid \\u escape")
		}
		r = r<<4 | rune(c)
	}
	s.i += 4
	return r, nil
}
