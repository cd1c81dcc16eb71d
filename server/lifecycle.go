package server

import (
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// forced is snapshot.ForcedExpired when tag, the decision's answer to q,
// moves the cluster off an expired line (counted and recorded); "" for
// any other answer. It asks only for a channel that moves clusters off
// expired lines and a cluster reporting a version.
func forced(v *core.View, channel string, q snapshot.Asker, tag resolver.Tag, held string) string {
	if held != "" || !q.HasReported {
		return ""
	}
	e := v.Entry(channel)
	if e == nil || !e.Ans.Channel.UpgradeExpired {
		return ""
	}
	return v.Snap.Forced(channel, q, tag)
}
