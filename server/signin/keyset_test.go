package signin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestATokenWithoutAKeyIDIsCheckedAgainstEachKeyOfItsAlgorithm: some
// providers sign ID tokens without a kid (a single-key JWKS). Such a token
// verifies against the key of its algorithm that signed it, among several;
// one signed by no key of the provider does not. (The in-process provider
// of the end-to-end tests always names its key: this one is a JWKS served
// over HTTP by the test.)
func TestATokenWithoutAKeyIDIsCheckedAgainstEachKeyOfItsAlgorithm(t *testing.T) {
	rsa1, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsa2, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &ec.PublicKey, KeyID: "ec", Algorithm: "ES256", Use: "sig"},
		{Key: &rsa1.PublicKey, KeyID: "one", Algorithm: "RS256", Use: "sig"},
		{Key: &rsa2.PublicKey, KeyID: "two", Algorithm: "RS256", Use: "sig"},
	}}
	fetches := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches++
		_ = json.NewEncoder(w).Encode(jwks)
	}))
	defer srv.Close()
	ks := &keySet{url: srv.URL, client: srv.Client(), algs: []jose.SignatureAlgorithm{jose.RS256, jose.ES256}, now: time.Now}
	sign := func(key any, alg jose.SignatureAlgorithm, kid string) string {
		opts := &jose.SignerOptions{}
		if kid != "" {
			opts = opts.WithHeader("kid", kid)
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
		if err != nil {
			t.Fatal(err)
		}
		jws, err := s.Sign([]byte(`{"sub":"id1"}`))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := jws.CompactSerialize()
		return out
	}
	ctx := context.Background()
	for _, c := range []struct {
		what string
		tok  string
		ok   bool
	}{
		{"no kid, the second RSA key", sign(rsa2, jose.RS256, ""), true},
		{"no kid, the EC key", sign(ec, jose.ES256, ""), true},
		{"no kid, a key the provider does not have", sign(stranger, jose.RS256, ""), false},
		{"a kid, as usual", sign(rsa1, jose.RS256, "one"), true},
		{"a kid naming another key", sign(rsa1, jose.RS256, "two"), false},
	} {
		payload, err := ks.VerifySignature(ctx, c.tok)
		if ok := err == nil && string(payload) == `{"sub":"id1"}`; ok != c.ok {
			t.Errorf("%s: verified %v (%v), want %v", c.what, ok, err, c.ok)
		}
	}
	if fetches != 1 {
		t.Errorf("the JWKS was fetched %d times, want once", fetches)
	}
}
