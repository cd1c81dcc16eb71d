package config

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/indexer/gates"
	"github.com/tidemark-dev/tidemark/resolver"
)

var (
	gateKeys      = []string{"platforms", "signature", "soak"}
	signatureKeys = []string{"cosign_key_file"}
)

// gates reads a source's `gates:` (CONTRACT section 9). The key file is
// read and parsed here, so that a bad one stops start-up with one line
// naming it, and the indexer gets it parsed.
func (p *parser) gates(s *Source, n *yaml.Node, item string) {
	if isNull(deref(n)) {
		return
	}
	f := p.mapping(n, item, "gates", gateKeys)
	var g resolver.Gates
	for _, el := range p.list(f["platforms"], item, "gates: platforms") {
		v, ok := p.str(el, item, "gates: platforms")
		if !ok {
			continue
		}
		if _, err := gates.ParsePlatforms([]string{v}); err != nil {
			p.add(deref(el), item, "gates: platforms: %v", err)
			continue
		}
		g.Platforms = append(g.Platforms, v)
	}
	if sn := f["signature"]; !isNull(deref(sn)) {
		sf := p.mapping(sn, item, "gates: signature", signatureKeys)
		if file, ok := p.str(sf["cosign_key_file"], item, "gates: signature: cosign_key_file"); !ok {
			p.add(deref(sn), item, "gates: signature: cosign_key_file: missing (the cosign public key, cosign.pub)")
		} else if key, err := gates.LoadKey(file); err != nil {
			p.add(deref(sf["cosign_key_file"]), item, "gates: signature: %s", oneLine(err))
		} else {
			g.SignatureKeyFile, g.SignatureKeyID = file, key.ID()
			s.SignatureKey = key
		}
	}
	g.Soak = p.soak(f["soak"], item, "gates: soak")
	s.Gates = g
}

// soak reads a soak duration: 0 or more.
func (p *parser) soak(n *yaml.Node, item, key string) time.Duration {
	d, has := p.duration(n, item, key)
	if has && d < 0 {
		p.add(deref(n), item, "%s: want a duration like 24h, or 0 for none, got %v", key, d)
		return 0
	}
	return d
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
