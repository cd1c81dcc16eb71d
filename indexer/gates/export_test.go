package gates

import "time"

// SetNow replaces the checker's clock (for MaxAge).
func SetNow(c *Checker, now func() time.Time) { c.now = now }
