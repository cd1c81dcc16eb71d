package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// reexecEnv makes the test binary run Main with its arguments instead of
// the tests: a test starts `tidemark` as a real process (to kill -9 it)
// without building it first.
const reexecEnv = "TIDEMARK_TEST_REEXEC"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		os.Exit(Main(context.Background(), os.Args[1:], strings.NewReader(""), os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}
