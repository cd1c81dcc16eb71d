package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// refetchEvery bounds how often an unknown key id fetches the provider's
// JWKS again: a flood of tokens naming made-up key ids costs the provider
// one request per 10 s, not one each.
const refetchEvery = 10 * time.Second

// maxJWKS bounds a JWKS document.
const maxJWKS = 1 << 20

// keySet is the provider's signing keys, fetched from its jwks_uri and
// again when a token names a key id not among them (key rotation), at
// most once every refetchEvery. It implements go-oidc's KeySet.
type keySet struct {
	url    string
	client *http.Client
	algs   []jose.SignatureAlgorithm
	mu     sync.Mutex
	keys   jose.JSONWebKeySet
	last   time.Time // of the last fetch, failed or not
	now    func() time.Time
}

var errUnknownKey = errors.New("no key of the provider has this key id")

// VerifySignature checks jwt's signature with the provider's key of its
// key id and returns the payload. An unsigned token (alg none) or one in
// an algorithm not allowed does not parse.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(jwt, k.algs)
	if err != nil {
		return nil, fmt.Errorf("malformed or unsigned token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("token has %d signatures, want 1", len(jws.Signatures))
	}
	kid := jws.Signatures[0].Header.KeyID
	key, err := k.key(ctx, kid)
	if err != nil {
		return nil, err
	}
	return jws.Verify(key)
}

func (k *keySet) key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.keys.Key(kid); len(ks) > 0 {
		return &ks[0], nil
	}
	if !k.last.IsZero() && k.now().Sub(k.last) < refetchEvery {
		return nil, fmt.Errorf("%w %q (the keys were fetched %s ago; next fetch in at most %s)", errUnknownKey, kid,
			k.now().Sub(k.last).Round(time.Second), refetchEvery)
	}
	k.last = k.now()
	if err := k.fetch(ctx); err != nil {
		return nil, err
	}
	if ks := k.keys.Key(kid); len(ks) > 0 {
		return &ks[0], nil
	}
	return nil, fmt.Errorf("%w %q", errUnknownKey, kid)
}

func (k *keySet) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return err
	}
	res, err := k.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the provider's keys: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the provider's keys: %s", res.Status)
	}
	var ks jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(res.Body, maxJWKS)).Decode(&ks); err != nil {
		return fmt.Errorf("the provider's keys: %w", err)
	}
	k.keys = ks
	return nil
}
