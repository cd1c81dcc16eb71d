package resolver

import "time"

// Instant is a point in time in 8 bytes (Unix nanoseconds) where a
// time.Time takes 24: a snapshot keeps two for every tag, and at a million
// tags the difference is 32 MB. The zero Instant is the zero time; so, for
// want of a spare value, is the Unix epoch itself (no tag is that old).
type Instant int64

// InstantOf is t as an Instant (to the nanosecond; its zone is dropped).
func InstantOf(t time.Time) Instant {
	if t.IsZero() {
		return 0
	}
	return Instant(t.UnixNano())
}

// Time is i as a time.Time in the local zone; the zero time for zero.
func (i Instant) Time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i))
}

// UTC is i as a time.Time in UTC.
func (i Instant) UTC() time.Time { return i.Time().UTC() }

// Add is i + d as a time.Time.
func (i Instant) Add(d time.Duration) time.Time { return i.Time().Add(d) }

// IsZero reports whether i is the zero time.
func (i Instant) IsZero() bool { return i == 0 }

// Equal reports whether i and t are the same instant.
func (i Instant) Equal(t time.Time) bool { return i.Time().Equal(t) }

// String formats i as time.Time does.
func (i Instant) String() string { return i.Time().String() }
