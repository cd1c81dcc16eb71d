package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/tidemark-dev/tidemark/internal/cli"
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

// portFree is serve --check-port: make run asks it before it starts
// Postgres, so that a taken port is said first there too. The
// configuration's warnings are serve's to print, once.
func portFree(cf configFlags, e *cli.Env, listen string) error {
	quiet := *e
	quiet.Stderr = io.Discard
	cfg, _, err := cf.load(&quiet)
	if err != nil {
		return err
	}
	ln, err := listenFirst(cmp.Or(listen, cfg.Listen))
	if err != nil {
		return err
	}
	return ln.Close()
}
