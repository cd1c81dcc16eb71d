package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/tidemark-dev/tidemark/resolver"
)

// SecretFunc reads a webhook secret; it is called per request, so that a
// rotated secret file applies at once.
type SecretFunc func() ([]byte, error)

func readSecret(kind, key string, read SecretFunc) ([]byte, error) {
	if read == nil {
		return nil, fmt.Errorf("%w: %s webhooks are not configured (set webhooks.%s)", resolver.ErrNotFound, kind, key)
	}
	secret, err := read()
	if err != nil {
		return nil, fmt.Errorf("%w: reading the %s webhook secret: %w", resolver.ErrUnavailable, kind, err)
	}
	if len(secret) == 0 {
		return nil, fmt.Errorf("%w: the %s webhook secret is empty", resolver.ErrUnavailable, kind)
	}
	return secret, nil
}

// CheckGitHubSignature verifies X-Hub-Signature-256: sha256=<hex HMAC-SHA256
// of the body with the hook's secret>, in constant time.
func CheckGitHubSignature(read SecretFunc, header string, body []byte) error {
	secret, err := readSecret("github", "github_secret_file", read)
	if err != nil {
		return err
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	got, derr := hex.DecodeString(hexSig)
	if !ok || derr != nil {
		return fmt.Errorf("%w: X-Hub-Signature-256 is missing or not sha256=<hex>", resolver.ErrUnauthorized)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("%w: X-Hub-Signature-256 does not match the body signed with webhooks.github_secret_file", resolver.ErrUnauthorized)
	}
	return nil
}

// CheckPathSecret compares Docker Hub's path secret in constant time (of
// the secrets' hashes, so the length leaks nothing either).
func CheckPathSecret(read SecretFunc, got string) error {
	secret, err := readSecret("dockerhub", "dockerhub_secret_file", read)
	if err != nil {
		return err
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256(secret)
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		return fmt.Errorf("%w: the Docker Hub webhook URL's secret is wrong", resolver.ErrForbidden)
	}
	return nil
}
