package store

import "time"

// SetLockPing shortens how often a held indexer lock's quiet connection is
// pinged, so that a test sees several pings in well under a second. How long
// each ping may take is left alone.
func SetLockPing(s *Store, d time.Duration) { s.Locker.Ping = d }
