package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listenFirst opens the service's listener, before anything slow (Postgres,
// migrations, the demo's registry): a port already taken is said at once,
// with what to do about it.
func listenFirst(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen %s: the address is in use (another Tidemark may be running there); choose another with --listen or TIDEMARK_LISTEN, e.g. TIDEMARK_LISTEN=127.0.0.1:8081", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w (set --listen or TIDEMARK_LISTEN to host:port)", addr, err)
	}
	return ln, nil
}
