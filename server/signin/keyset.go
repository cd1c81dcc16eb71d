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
	h := jws.Signatures[0].Header
	if h.KeyID == "" {
		// No key id: each key of the token's algorithm is tried.
		keys, err := k.ofAlgorithm(ctx, h.Algorithm)
		if err != nil {
			return nil, err
		}
		for i := range keys {
			if payload, err := jws.Verify(&keys[i]); err == nil {
				return payload, nil
			}
		}
		return nil, fmt.Errorf("the token names no key id, and no key of the provider for %s verifies it", h.Algorithm)
	}
	key, err := k.key(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	return jws.Verify(key)
}

// ofAlgorithm are the provider's signing keys usable with alg (a key that
// names no algorithm is tried too), fetched first when none is known.
func (k *keySet) ofAlgorithm(ctx context.Context, alg string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.keys.Keys) == 0 && (k.last.IsZero() || k.now().Sub(k.last) >= refetchEvery) {
		k.last = k.now()
		if err := k.fetch(ctx); err != nil {
			return nil, err
		}
	}
	var out []jose.JSONWebKey
	for _, key := range k.keys.Keys {
		if (key.Algorithm == "" || key.Algorithm == alg) && (key.Use == "" || key.Use == "sig") {
			out = append(out, key)
		}
	}
	return out, nil
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
