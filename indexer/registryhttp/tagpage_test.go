package registryhttp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeTagPage(t *testing.T) {
	lim := PageLimits{Bytes: 1 << 10, Tags: 3}
	for _, tc := range []struct {
		name, body string
		want       []string
		err        string
	}{
		{name: "distribution shape", body: `{"name":"app","tags":["a","b"]}`, want: []string{"a", "b"}},
		{name: "google shape skips manifest details",
			body: `{"child":[],"manifest":{"sha256:1":{"tag":["x"],"n":[1,{"a":null}]}},"name":"app","tags":["a"]}`,
			want: []string{"a"}},
		{name: "null tags is none", body: `{"name":"app","tags":null}`},
		{name: "tags not a list", body: `{"tags":"a"}`, err: `"tags" is a, not a list`},
		{name: "truncated is an error", body: `{"tags":["a",`, err: "EOF"},
		{name: "too many tags are refused", body: `{"tags":["a","b","c","d"]}`,
			err: "registry r.example sent more than 3 tags in one page"},
		{name: "too many bytes are refused", body: `{"name":"` + strings.Repeat("x", 2<<10) + `","tags":[]}`,
			err: "registry r.example sent more than 0 MiB in one page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeTagPage(strings.NewReader(tc.body), "r.example", lim)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}
