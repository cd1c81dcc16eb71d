package main

import (
	"strings"
	"testing"
)

// TestMistakesOnTheCommandLineSayWhatToType: a wrong argument count shows
// the usage line, an unknown flag the nearest one, and demo without a
// database says what to set (not a temporary file's name).
func TestMistakesOnTheCommandLineSayWhatToType(t *testing.T) {
	c := &tmcli{t: t, env: map[string]string{}}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"promote"}, []string{"tidemark promote: accepts 2 arg(s), received 0", "\nusage: tidemark promote CHANNEL VERSION"}},
		{[]string{"channels", "--sever", "x"}, []string{`unknown flag: --sever (did you mean "--server"?)`, "\nusage: tidemark channels [CHANNEL]"}},
		{[]string{"serve", "--listn", "x"}, []string{`unknown flag: --listn (did you mean "--listen"?)`}},
		{[]string{"demo"}, []string{"demo needs DATABASE_URL"}},
	} {
		code, _, errs := c.run(tc.args...)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errs, w) {
				t.Errorf("tidemark %s: exit %d, stderr %q, want %q", strings.Join(tc.args, " "), code, errs, w)
			}
		}
		if strings.Contains(errs, "tidemark-demo") {
			t.Errorf("tidemark %s names a temporary file: %q", strings.Join(tc.args, " "), errs)
		}
	}
}
