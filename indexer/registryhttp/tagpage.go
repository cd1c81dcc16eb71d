package registryhttp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// A tag list page is read as a stream, one tag at a time, under two caps,
// so that a registry (hostile or broken) cannot make the process hold much
// more than the tags it keeps: decoding a whole 64 MiB page at once took
// ~220 MB. Registries that page send 1000 tags or fewer; Google's and a
// few others send every tag in one page, with per-tag manifest details
// that are skipped here without being held.
const (
	MaxPageBytes = 32 << 20 // body bytes of one page
	MaxPageTags  = 100_000  // tags in one page
)

// ErrPageTooLarge is a page over a cap. It is refused, never fetched again.
var ErrPageTooLarge = errors.New("tag list page too large")

type PageLimits struct {
	Bytes int64
	Tags  int
}

// DecodeTagPage reads {"tags":[...], ...} from r, skipping other members.
// encoding/json's Decoder reads the object and skips the other members;
// the first "tags" list is read by readTagList, five times faster a page
// than one Decode a tag, with the same result (TestDecodeTagPageAgreesWithTheDecoder).
func DecodeTagPage(r io.Reader, registry string, lim PageLimits) ([]string, error) {
	return decodeTagPage(r, registry, lim, true)
}

// decodeTagPage is DecodeTagPage; without byHand it reads every list
// through the decoder (decodeList), as DecodeTagPage did before
// readTagList: the oracle of TestDecodeTagPageAgreesWithTheDecoder.
func decodeTagPage(r io.Reader, registry string, lim PageLimits, byHand bool) ([]string, error) {
	cr := &cappedReader{r: r, left: lim.Bytes}
	dec := json.NewDecoder(cr)
	tooLarge := func(err error) error {
		if cr.over {
			return fmt.Errorf("%w: registry %s sent more than %d MiB in one page", ErrPageTooLarge, registry, lim.Bytes>>20)
		}
		return err
	}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, tooLarge(err)
	}
	tooMany := func() error {
		return fmt.Errorf("%w: registry %s sent more than %d tags in one page", ErrPageTooLarge, registry, lim.Tags)
	}
	var tags []string
	fast := byHand // the first "tags" list is read by readTagList
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, tooLarge(err)
		}
		if key != "tags" {
			if err := skipValue(dec); err != nil {
				return nil, tooLarge(err)
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, tooLarge(err)
		}
		if tok == nil { // "tags": null, as some registries say "none"
			continue
		}
		if tok != json.Delim('[') {
			return nil, fmt.Errorf(`"tags" is %v, not a list`, tok)
		}
		if !fast {
			// A second "tags" member (no registry sends one), or the
			// oracle: element by element through the decoder.
			if tags, err = decodeList(dec, tags, lim.Tags, tooMany); err != nil {
				return nil, tooLarge(err)
			}
			continue
		}
		// The list's strings are read straight from the stream: the
		// decoder took a reflective Decode a tag, most of a listing's
		// CPU. The members after the list, if any, go to a new decoder as
		// an object of their own.
		fast = false
		br := bufio.NewReader(io.MultiReader(dec.Buffered(), cr))
		if tags, err = readTagList(br, tags, lim.Tags, tooMany); err != nil {
			return nil, tooLarge(err)
		}
		more, err := moreMembers(br)
		if err != nil {
			return nil, tooLarge(err)
		}
		if !more {
			return tags, nil
		}
		dec = json.NewDecoder(io.MultiReader(strings.NewReader("{"), br))
		if err := expectDelim(dec, '{'); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, tooLarge(err)
	}
	return tags, nil
}

// decodeList reads the strings of a JSON list whose '[' dec read, through
// its ']', one Decode an element, appending them to tags; more than max in
// all is tooMany().
func decodeList(dec *json.Decoder, tags []string, max int, tooMany func() error) ([]string, error) {
	for dec.More() {
		if len(tags) >= max {
			return nil, tooMany()
		}
		var t string
		if err := dec.Decode(&t); err != nil {
			return nil, err
		}
		tags = append(tags, t)
	}
	_, err := dec.Token() // ']'
	return tags, err
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %v, got %v", d, tok)
	}
	return nil
}

// skipValue reads one value token by token, never holding more than a
// token of it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// cappedReader fails once more than left bytes were asked for.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, ErrPageTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// readTagList reads the strings of a JSON list whose '[' was read, through
// its ']', appending them to tags; more than max in all is tooMany(). A
// string without escapes, control characters or bytes that are not UTF-8
// (every registry tag) is taken as it stands; any other is decoded by
// encoding/json from its literal, so the result is the decoder's.
func readTagList(br *bufio.Reader, tags []string, max int, tooMany func() error) ([]string, error) {
	for first := true; ; first = false {
		c, err := nextNonSpace(br)
		if err != nil {
			return nil, err
		}
		if c == ']' {
			return tags, nil
		}
		// Anything else is one more element, counted before it is read
		// (as the decoder did).
		if len(tags) >= max {
			return nil, tooMany()
		}
		if !first {
			if c != ',' {
				return nil, fmt.Errorf("tag list: %q after a tag, want ',' or ']'", c)
			}
			if c, err = nextNonSpace(br); err != nil {
				return nil, err
			}
		}
		switch c {
		case '"':
			t, err := readString(br)
			if err != nil {
				return nil, err
			}
			tags = append(tags, t)
		case 'n':
			// null, which encoding/json decodes into a string as "" (and
			// the indexer then refuses as a tag name, as before).
			rest := make([]byte, 3)
			if _, err := io.ReadFull(br, rest); err != nil || string(rest) != "ull" {
				return nil, errors.New("tag list: an element starting 'n' is neither a string nor null")
			}
			tags = append(tags, "")
		default:
			return nil, fmt.Errorf("tag list: an element starting %q is not a string", c)
		}
	}
}

// moreMembers reads what follows a member of the page's object: its '}'
// (false) or a ',' before the next member's key (true, the key's quote
// left unread).
func moreMembers(br *bufio.Reader) (bool, error) {
	c, err := nextNonSpace(br)
	if err != nil {
		return false, err
	}
	switch c {
	case '}':
		return false, nil
	case ',':
		if c, err = nextNonSpace(br); err != nil {
			return false, err
		}
		if c == '"' {
			return true, br.UnreadByte()
		}
	}
	return false, fmt.Errorf("tag list: %q after it, want ',' and a key, or '}'", c)
}

// nextNonSpace reads the next byte that is not JSON whitespace; the end of
// the stream is io.ErrUnexpectedEOF.
func nextNonSpace(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// readString reads a JSON string whose opening quote was read.
func readString(br *bufio.Reader) (string, error) {
	b, err := br.ReadSlice('"')
	if err == nil && plain(b[:len(b)-1]) {
		return string(b[:len(b)-1]), nil
	}
	// Escapes, control characters, bytes that are not UTF-8, or a string
	// longer than the buffer: gather the literal and let encoding/json
	// decode it. The page's byte cap bounds how long it can be.
	lit := append([]byte{'"'}, b...)
	for err == bufio.ErrBufferFull || (err == nil && escapedQuote(lit)) {
		b, err = br.ReadSlice('"')
		lit = append(lit, b...)
	}
	if err == io.EOF {
		return "", io.ErrUnexpectedEOF
	}
	if err != nil {
		return "", err
	}
	var t string
	if err := json.Unmarshal(lit, &t); err != nil {
		return "", fmt.Errorf("tag list: %w", err)
	}
	return t, nil
}

// plain reports whether b needs no decoding: no escape, no control
// character, valid UTF-8.
func plain(b []byte) bool {
	ascii := true
	for _, c := range b {
		if c < 0x20 || c == '\\' {
			return false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	return ascii || utf8.Valid(b)
}

// escapedQuote reports whether the quote ending lit is escaped: preceded
// by an odd number of backslashes.
func escapedQuote(lit []byte) bool {
	body := lit[:len(lit)-1]
	n := len(body) - len(bytes.TrimRight(body, "\\"))
	return n%2 == 1
}
