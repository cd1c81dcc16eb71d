package resolver

import (
	"fmt"
	"strings"
)

// Stream is a version's risk level. Streams nest: a channel on stream S serves
// every version whose stream is S or safer (lower). One byte: it sits
// beside a Tag's flags.
type Stream int8

const (
	Released Stream = iota // no pre-release label
	Proposed               // rc
	Devel                  // beta
	Testing                // any other label
)

var streamNames = [...]string{"released", "proposed", "devel", "testing"}

func (s Stream) String() string {
	if s < 0 || int(s) >= len(streamNames) {
		return fmt.Sprintf("Stream(%d)", int(s))
	}
	return streamNames[s]
}

// Includes reports whether a channel on stream s serves a version on stream v.
func (s Stream) Includes(v Stream) bool { return v <= s }

// ParseStream accepts the four stream names and juju's "develop" alias.
func ParseStream(name string) (Stream, error) {
	switch strings.ToLower(name) {
	case "released":
		return Released, nil
	case "proposed":
		return Proposed, nil
	case "devel", "develop":
		return Devel, nil
	case "testing":
		return Testing, nil
	}
	return 0, fmt.Errorf("%w: unknown stream %q (want released, proposed, devel or testing)", ErrInvalid, name)
}

// MarshalText makes streams print by name in JSON and YAML.
func (s Stream) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText is ParseStream for encoders.
func (s *Stream) UnmarshalText(b []byte) error {
	v, err := ParseStream(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
