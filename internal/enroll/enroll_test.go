package enroll

import (
	"net/http/httptest"
	"testing"
)

func TestKeyOf(t *testing.T) {
	for _, c := range []struct{ url, auth, want string }{
		{"/v1-release/channels/stable", "", ""},
		{"/v1-release/channels/stable?key=tdm_a", "", "tdm_a"},
		{"/v1-release/channels/stable?current=v1&key=tdm_a%2Bb", "", "tdm_a+b"},
		{"/v1-release/channels/stable?monkey=tdm_x", "", ""},
		{"/v1-release/channels/stable", "Bearer tdm_b", "tdm_b"},
		{"/v1-release/channels/stable?key=tdm_a", "bearer  tdm_b ", "tdm_b"},
		{"/v1-release/channels/stable", "Basic eA==", ""},
	} {
		r := httptest.NewRequest("GET", c.url, nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if got := KeyOf(r); got != c.want {
			t.Errorf("KeyOf(%s, %q) = %q, want %q", c.url, c.auth, got, c.want)
		}
	}
}
