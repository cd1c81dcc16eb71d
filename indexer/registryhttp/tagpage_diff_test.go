package registryhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// decodeTagPageWithDecoder reads every list through encoding/json's
// Decoder, one Decode an element, as DecodeTagPage did before the list was
// read by hand.
func decodeTagPageWithDecoder(r io.Reader, registry string, lim PageLimits) ([]string, error) {
	return decodeTagPage(r, registry, lim, false)
}

// TestDecodeTagPageAgreesWithTheDecoder: on pages a registry sends and on
// broken and hostile ones (escapes, bytes that are not UTF-8, control
// characters, strings longer than the read buffer, misplaced commas,
// elements that are not strings, a second "tags" member, members after
// the list, truncation anywhere, both caps), DecodeTagPage accepts what
// the decoder accepts, with the same tags, and refuses what it refuses.
func TestDecodeTagPageAgreesWithTheDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 2026))
	pieces := []string{"v1.33.6-k3s1", "latest", "a", "", `\"`, `\\`, `\/`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\n`, `\x`,
		"é", "\xff", "\x01", "日本", strings.Repeat("x", 5000), `\`}
	str := func() string {
		var b strings.Builder
		for range r.IntN(3) + 1 {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return `"` + b.String() + `"`
	}
	ws := func() string { return []string{"", "", " ", "\n\t ", "\r\n"}[r.IntN(5)] }
	list := func() string {
		var els []string
		for range r.IntN(6) {
			switch r.IntN(12) {
			case 0:
				els = append(els, "1")
			case 1:
				els = append(els, "null")
			case 2:
				els = append(els, `{"a":"b"}`)
			default:
				els = append(els, ws()+str()+ws())
			}
		}
		s := "[" + strings.Join(els, ",") + "]"
		switch r.IntN(10) {
		case 0:
			s = strings.Replace(s, "]", ",]", 1)
		case 1:
			s = strings.Replace(s, ",", ",,", 1)
		case 2:
			s = "null"
		}
		return s
	}
	page := func() string {
		members := []string{`"name":` + str(), `"tags":` + list()}
		if r.IntN(3) == 0 {
			members = append(members, `"manifest":{"sha256:1":{"tag":["x"],"n":[1,{"a":null}],"t":true}}`)
		}
		if r.IntN(4) == 0 {
			members = append(members, `"tags":`+list())
		}
		if r.IntN(4) == 0 {
			members = append(members, `"child":[]`)
		}
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		for i := range members {
			members[i] = ws() + members[i] + ws()
		}
		s := "{" + strings.Join(members, ",") + "}" + ws()
		switch r.IntN(12) {
		case 0:
			s = s[:r.IntN(len(s)+1)] // truncated
		case 1:
			s = strings.Replace(s, "}", ",}", 1)
		case 2:
			s = strings.Replace(s, ":", " : ", 1)
		}
		return s
	}
	limits := []PageLimits{{Bytes: 1 << 20, Tags: 1000}, {Bytes: 1 << 20, Tags: 3}, {Bytes: 6000, Tags: 1000}}
	agreed, refused := 0, 0
	for i := range 20000 {
		body := page()
		lim := limits[i%len(limits)]
		want, werr := decodeTagPageWithDecoder(strings.NewReader(body), "r.example", lim)
		got, gerr := DecodeTagPage(strings.NewReader(body), "r.example", lim)
		switch {
		case (werr == nil) != (gerr == nil):
			t.Fatalf("page %q, limits %+v:\ndecoder: %v, %v\nDecodeTagPage: %v, %v", body, lim, want, werr, got, gerr)
		case werr != nil:
			// Past the byte cap, whether a broken page is found broken or
			// too large first depends on how far each reads ahead.
			overCap := int64(len(body)) > lim.Bytes
			if !overCap && errors.Is(werr, ErrPageTooLarge) != errors.Is(gerr, ErrPageTooLarge) {
				t.Fatalf("page %q, limits %+v: decoder %v, DecodeTagPage %v", body, lim, werr, gerr)
			}
			refused++
		case !slices.Equal(want, got):
			t.Fatalf("page %q:\ndecoder       %q\nDecodeTagPage %q", body, want, got)
		default:
			agreed++
		}
	}
	t.Logf("%d pages read alike, %d refused by both", agreed, refused)
	if agreed < 2000 || refused < 2000 {
		t.Errorf("%d accepted and %d refused: the pages do not try both sides", agreed, refused)
	}
}

// BenchmarkDecodeTagPage: a distribution registry's page of 1,000 tags,
// read by DecodeTagPage and by the decoder it replaced.
func BenchmarkDecodeTagPage(b *testing.B) {
	tags := make([]string, 1000)
	for i := range tags {
		tags[i] = fmt.Sprintf("v1.%d.%d-k3s1", i/40, i%40)
	}
	body, err := json.Marshal(map[string]any{"name": "rancher/k3s-upgrade", "tags": tags})
	if err != nil {
		b.Fatal(err)
	}
	lim := PageLimits{Bytes: MaxPageBytes, Tags: MaxPageTags}
	for _, fn := range []struct {
		name string
		read func(io.Reader, string, PageLimits) ([]string, error)
	}{{"DecodeTagPage", DecodeTagPage}, {"decoder", decodeTagPageWithDecoder}} {
		b.Run(fn.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				got, err := fn.read(strings.NewReader(string(body)), "r.example", lim)
				if err != nil || len(got) != len(tags) {
					b.Fatalf("%d tags, %v", len(got), err)
				}
			}
		})
	}
}
