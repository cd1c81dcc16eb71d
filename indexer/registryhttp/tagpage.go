package registryhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
func DecodeTagPage(r io.Reader, registry string, lim PageLimits) ([]string, error) {
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
	var tags []string
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
		for dec.More() {
			if len(tags) >= lim.Tags {
				return nil, fmt.Errorf("%w: registry %s sent more than %d tags in one page", ErrPageTooLarge, registry, lim.Tags)
			}
			var t string
			if err := dec.Decode(&t); err != nil {
				return nil, tooLarge(err)
			}
			tags = append(tags, t)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, tooLarge(err)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, tooLarge(err)
	}
	return tags, nil
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
