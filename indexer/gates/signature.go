package gates

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Verification is done here with the standard library rather than with
// sigstore-go or cosign's packages. The format checked is small and fixed (a
// simple-signing JSON payload in a layer, a base64 signature in an
// annotation, a PEM public key); the libraries are not. Measured for this
// module: importing only github.com/sigstore/sigstore/pkg/signature (v1.10.4)
// makes a module graph of 81 modules (go list -m all) and compiles 96
// non-standard packages, protobuf and the TUF/in-toto libraries among them;
// cosign and sigstore-go pull in more, and their current releases
// (sigstore v1.11, sigstore-go v1.4) need Go 1.27, newer than this module's
// toolchain. A key-based check needs ecdsa.VerifyASN1 and ed25519.Verify.
// Keyless signing (Fulcio certificates, Rekor inclusion proofs) is where a
// library would earn its weight; it is not a gate here.

// Media and artifact types and the annotation of cosign's signature format.
const (
	SignatureArtifactType = "application/vnd.dev.cosign.artifact.sig.v1+json"
	SimpleSigningType     = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation   = "dev.cosignproject.cosign/signature"
	payloadType           = "cosign container image signature"
	maxPayload            = 1 << 20 // a simple-signing payload is a few hundred bytes
)

// SigState is the outcome of the signature gate.
type SigState string

const (
	SigOK      SigState = "ok"
	SigMissing SigState = "missing" // no signature image, or one with no signature layer
	SigInvalid SigState = "invalid" // signatures present, none valid for this key and digest
)

// Signature is the signature gate's result for one digest.
type Signature struct {
	State  SigState
	Reason string // why invalid: the first signature's problem
	Where  string // where the valid (or first invalid) signature was found
}

// simpleSigning is the part of cosign's payload that is checked. The
// identity's docker-reference is not: cosign does not check it either, and
// an image copied to a mirror keeps its signatures.
type simpleSigning struct {
	Critical struct {
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// SignatureTag is the classic cosign tag of digest d's signatures.
func SignatureTag(d v1.Hash) string { return d.Algorithm + "-" + d.Hex + ".sig" }

// VerifySignature looks for a cosign signature of digest d in repo: the
// classic sha256-<hex>.sig tag first, then OCI 1.1 referrers. An error means
// the registry could not be asked (the gate is unknown, not failed).
func VerifySignature(ctx context.Context, repo name.Repository, d v1.Hash, key *Key, opts ...remote.Option) (Signature, error) {
	opts = append(opts[:len(opts):len(opts)], remote.WithContext(ctx))
	var first *Signature
	note := func(s Signature) {
		if first == nil {
			first = &s
		}
	}

	tag := repo.Tag(SignatureTag(d))
	img, err := remote.Image(tag, opts...)
	switch {
	case notFound(err):
	case err != nil:
		return Signature{}, fmt.Errorf("signature tag %s: %w", tag, err)
	default:
		s, err := checkSignatureImage(img, d, key)
		if err != nil {
			return Signature{}, fmt.Errorf("signature tag %s: %w", tag, err)
		}
		s.Where = "tag " + tag.TagStr()
		if s.State == SigOK {
			return s, nil
		}
		if s.State == SigInvalid {
			note(s)
		}
	}

	subject := repo.Digest(d.String())
	idx, err := remote.Referrers(subject, append(opts, remote.WithFilter("artifactType", SignatureArtifactType))...)
	if err != nil {
		return Signature{}, fmt.Errorf("referrers of %s: %w", subject, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return Signature{}, fmt.Errorf("referrers of %s: %w", subject, err)
	}
	for _, m := range im.Manifests {
		if m.ArtifactType != SignatureArtifactType {
			continue
		}
		ref := repo.Digest(m.Digest.String())
		img, err := remote.Image(ref, opts...)
		if err != nil {
			return Signature{}, fmt.Errorf("signature referrer %s: %w", ref, err)
		}
		s, err := checkSignatureImage(img, d, key)
		if err != nil {
			return Signature{}, fmt.Errorf("signature referrer %s: %w", ref, err)
		}
		s.Where = "referrer " + m.Digest.String()
		if s.State == SigOK {
			return s, nil
		}
		if s.State == SigInvalid {
			note(s)
		}
	}
	if first != nil {
		return *first, nil
	}
	return Signature{State: SigMissing}, nil
}

// checkSignatureImage checks every signature layer of a cosign signature
// image (cosign appends one layer per signature) and passes if one is valid.
func checkSignatureImage(img v1.Image, d v1.Hash, key *Key) (Signature, error) {
	m, err := img.Manifest()
	if err != nil {
		return Signature{}, err
	}
	var first *Signature
	for _, l := range m.Layers {
		b64, ok := l.Annotations[SignatureAnnotation]
		if !ok {
			continue
		}
		reason, err := checkLayer(img, l, b64, d, key)
		if err != nil {
			return Signature{}, err
		}
		if reason == "" {
			return Signature{State: SigOK}, nil
		}
		if first == nil {
			first = &Signature{State: SigInvalid, Reason: reason}
		}
	}
	if first == nil {
		return Signature{State: SigMissing}, nil
	}
	return *first, nil
}

// checkLayer returns why one signature layer is invalid, "" if it is valid,
// or an error if its payload could not be fetched.
func checkLayer(img v1.Image, l v1.Descriptor, b64 string, d v1.Hash, key *Key) (string, error) {
	sig, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "malformed: signature annotation is not base64", nil
	}
	if l.Size > maxPayload {
		return fmt.Sprintf("malformed: payload of %d bytes", l.Size), nil
	}
	layer, err := img.LayerByDigest(l.Digest)
	if err != nil {
		return "", fmt.Errorf("payload %s: %w", l.Digest, err)
	}
	rc, err := layer.Compressed() // fetched as stored and checked against its digest
	if err != nil {
		return "", fmt.Errorf("payload %s: %w", l.Digest, err)
	}
	defer rc.Close()
	payload, err := io.ReadAll(io.LimitReader(rc, maxPayload+1))
	if err != nil {
		return "", fmt.Errorf("payload %s: %w", l.Digest, err)
	}
	if !key.verify(payload, sig) {
		return "signature does not verify with the key (wrong key or altered payload)", nil
	}
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return "malformed: payload is not simple-signing JSON", nil
	}
	if p.Critical.Type != payloadType {
		return fmt.Sprintf("malformed: payload type %q", p.Critical.Type), nil
	}
	if got := p.Critical.Image.DockerManifestDigest; got != d.String() {
		return fmt.Sprintf("payload names another digest: %s", got), nil
	}
	return "", nil
}

func notFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || strings.EqualFold(string(d.Code), "NAME_UNKNOWN") {
			return true
		}
	}
	return false
}
