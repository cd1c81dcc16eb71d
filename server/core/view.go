package core

import (
	"fmt"
	"github.com/tidemark-dev/tidemark/server/graphcache"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// View is a snapshot plus what the hot path needs precomputed per channel.
// Like the snapshot it is immutable once built.
type View struct {
	Snap *snapshot.Snapshot
	List []*Entry // configuration order: List[i] answers Snap.Channels()[i]
	// Graphs memoizes the encoded update graphs of this snapshot.
	Graphs *graphcache.Cache
}

// Entry is one channel's answer, ready to send.
type Entry struct {
	Ans     snapshot.ChannelAnswer
	Version string // canonical; "" when nothing is eligible
	// Location is the full Location when it does not depend on the request
	// (an explicit redirect, or ExternalURL set); body is its 302 body.
	Location string
	Body     []byte
	// LocationHeader is Location as a header's values, made once: like
	// the other constant headers of a 302 it is shared by every answer
	// (net/http copies header values when it writes them).
	LocationHeader []string
	// Suffix follows the request's base URL when location is "".
	Suffix string
	digest string // the image to pull by; "" when nothing is eligible
	etag   string
	// Held is why this answer holds the cluster that asked where it is
	// (snapshot.HeldDowngrade); "" for the channel's own answers.
	Held string
	// steps are a stepwise channel's per-cluster answers by the canonical
	// version they serve (stepEntries); nil for other channels.
	steps map[string]*Entry
	// counts are the last counts of rollouts' clusters, shared by every
	// entry of every view (internal/rollouts counts them).
	counts *rollouts.Counts
	// tufRev is each channel's published signed revision; nil: none.
	tufRev func(channel string) (int64, bool)
	// Line is the channel's version's line, Running (with RunningVersion)
	// the asking cluster's, when deprecated or expired; Forced is
	// snapshot.ForcedExpired when the answer moves the cluster off one.
	Line, Running  *lifecycle.Line
	RunningVersion string
	Forced         string
}

// newView makes snap ready to serve. An entry of prev whose answer snap
// carried unchanged (snapshot.Snapshot.SameAnswer) is kept as it is: a
// reload after one source changed rebuilds that source's channels, not all.
// externalURL and counts are the server's, the same for every view.
func newView(snap *snapshot.Snapshot, prev *View, externalURL string, counts *rollouts.Counts, tufRev func(string) (int64, bool)) *View {
	answers := snap.Channels()
	v := &View{Graphs: &graphcache.Cache{}, Snap: snap, List: make([]*Entry, len(answers))}
	for i := range answers {
		if prev != nil && snap.SameAnswerAt(prev.Snap, i) {
			v.List[i] = prev.List[i]
			continue
		}
		a := &answers[i]
		e := newEntry(*a, externalURL)
		e.counts, e.tufRev = counts, tufRev
		if a.Tag != nil {
			e.Line = EndingLine(snap.Lines().LineOf(a.Channel.Source, a.Tag.Version))
		}
		if a.Channel.Stepwise && a.Tag != nil {
			e.steps = stepEntries(snap, e, externalURL)
		}
		if a.Rollout != nil {
			e.steps = rolloutEntries(e, externalURL)
		}
		v.List[i] = e
	}
	return v
}

// Entry is channel's entry; nil when the view has none.
func (v *View) Entry(channel string) *Entry { return v.entry(channel) }

// entry is channel's entry; nil when the view has none.
func (v *View) entry(channel string) *Entry {
	if i, ok := v.Snap.ChannelIndex(channel); ok {
		return v.List[i]
	}
	return nil
}

// newEntry is a's answer made ready to send.
func newEntry(a snapshot.ChannelAnswer, externalURL string) *Entry {
	e := &Entry{Ans: a}
	if a.Tag != nil {
		e.Version = a.Tag.Version.String()
		switch {
		case strings.HasPrefix(a.Channel.Redirect, "/") && !strings.HasPrefix(a.Channel.Redirect, "//"):
			// A path on this service: absolute like every other link,
			// from external_url or else the request.
			if externalURL != "" {
				e.Location = externalURL + a.Channel.Redirect + e.Version
			} else {
				e.Suffix = a.Channel.Redirect + e.Version
			}
		case a.Channel.Redirect != "":
			e.Location = a.Channel.Redirect + e.Version
		case externalURL != "":
			e.Location = externalURL + defaultRedirectPath(a.Channel.Source) + e.Version
		default:
			e.Suffix = defaultRedirectPath(a.Channel.Source) + e.Version
		}
		if e.Location != "" {
			e.Body = RedirectBody(e.Location)
			e.LocationHeader = []string{e.Location}
		}
	}
	e.digest = servedDigest(a)
	tagged := e.Version
	if h := a.State.Hold; h != nil {
		// The object names its hold: a hold starting or ending is news
		// even when the version stays.
		tagged += "|held " + h.Reason + " " + h.Until.UTC().String()
	}
	e.etag = channelETag(a.State.Revision, tagged, a.Pinned, e.digest)
	return e
}

// stepEntries are a stepwise channel's per-cluster answers, ready to send:
// one per indexed version of the channel's major up to its version, which
// is every answer NextStep gives a cluster in that major. Answers outside
// it (a cluster above the channel, on another major, or on a version never
// indexed) are built per request (stepEntry).
func stepEntries(snap *snapshot.Snapshot, e *Entry, externalURL string) map[string]*Entry {
	a := e.Ans
	vs, err := snap.Versions(a.Channel.Source, resolver.Testing, "")
	if err != nil {
		return nil
	}
	c := a.Tag.Version
	out := make(map[string]*Entry)
	for i := range vs {
		v := vs[i].Version
		if v.Major != c.Major || resolver.Compare(v, c) > 0 {
			continue
		}
		out[v.String()] = e.stepEntry(vs[i].Tag, externalURL)
	}
	return out
}

// rolloutEntries adds to e's per-cluster answers one for every version
// its rollout may send a cluster to, so a rollout answer is a lookup.
func rolloutEntries(e *Entry, externalURL string) map[string]*Entry {
	out := e.steps
	if out == nil {
		out = make(map[string]*Entry)
	}
	for _, t := range e.Ans.Rollout.Tags() {
		if c := t.Version.String(); out[c] == nil && c != e.Version {
			out[c] = e.stepEntry(*t, externalURL)
		}
	}
	return out
}

// EntryFor is e's channel answering tag: e itself for its own version, a
// precomputed entry for the others, else one built now (bounded: one).
func (e *Entry) EntryFor(tag *resolver.Tag, externalURL string) *Entry {
	c := tag.Version.String()
	if c == e.Version {
		return e
	}
	if se := e.steps[c]; se != nil {
		return se
	}
	return e.stepEntry(*tag, externalURL)
}

// stepEntry is e's channel answering tag to one cluster. The pin's digest
// belongs to the channel's own version only.
func (e *Entry) stepEntry(tag resolver.Tag, externalURL string) *Entry {
	a := e.Ans
	if a.Tag != nil && tag.Version.String() != a.Tag.Version.String() {
		a.State.PinDigest = ""
	}
	a.Tag = &tag
	se := newEntry(a, externalURL)
	se.counts, se.tufRev = e.counts, e.tufRev
	return se
}

// defaultRedirectPath is the redirect used when a channel names none: the
// version's own API object, so a browser following the 302 lands somewhere useful.
func defaultRedirectPath(source string) string {
	return "/api/v1/sources/" + source + "/versions/"
}

// RedirectBody is what channelserver (net/http's Redirect) sends with a 302.
func RedirectBody(location string) []byte {
	return []byte(`<a href="` + html.EscapeString(location) + `">Found</a>.` + "\n")
}

// servedDigest is the digest a channel answer hands out. A promotion is of
// an image, not of a tag name: if a pinned tag has been re-pointed since,
// the digest promoted is the one to pull by.
func servedDigest(a snapshot.ChannelAnswer) string {
	if a.Tag == nil {
		return ""
	}
	if a.State.Pin != "" && a.State.PinDigest != "" {
		return a.State.PinDigest
	}
	return a.Tag.Digest.String()
}

// channelETag changes whenever the channel's answer can: its state revision
// (pins), its resolved version (scans, blocks) and the digest it serves (a
// re-tag moves the image under an unchanged version). The revision comes
// first: If-Match is checked on it alone (IfMatchRevision).
func channelETag(revision int64, version string, pinned bool, digest string) string {
	p := "f"
	if pinned {
		p = "p"
	}
	return `"` + strconv.FormatInt(revision, 10) + "-" + p + "-" + version + "-" + digest + `"`
}

// ETagAt is e's ETag at now.
func (e *Entry) ETagAt(now time.Time) string {
	return e.etagWith(now, e.clusters())
}

// etagWith is e's ETag at now with the rollout counts cc. A channel with a
// rollout answers differently as its steps pass and as its clusters are
// counted, with no new snapshot, so its progress and counts are part of
// it; both follow the revision, which alone If-Match compares.
func (e *Entry) etagWith(now time.Time, cc *openapi.RolloutClusters) string {
	rv := e.Ans.Rollout
	rev, signed := e.tufRevision()
	if (rv == nil || rv.Baseline) && !signed && e.Line == nil && e.Running == nil {
		return e.etag
	}
	tag := e.etag[:len(e.etag)-1] + e.lifecycleTag()
	if rv != nil && !rv.Baseline {
		p := rv.Progress(now)
		tag += "-r" + strconv.FormatInt(rv.ID, 10) + "." + strconv.Itoa(p.Step) + "." + string(p.State)
		if cc != nil {
			tag += ".c" + strconv.Itoa(cc.To) + "." + strconv.Itoa(cc.From)
		}
	}
	// The signed revision moves with no new snapshot (the publisher signs
	// after the swap): it is part of the object, so of its ETag.
	if signed {
		tag += ".t" + strconv.FormatInt(rev, 10)
	}
	return tag + `"`
}

// tufRevision is the channel's published signed revision, if any.
func (e *Entry) tufRevision() (int64, bool) {
	if e.tufRev == nil {
		return 0, false
	}
	return e.tufRev(e.Ans.Channel.Name)
}

// clusters is the counts of e's rollout; nil when it has none (or only a
// baseline) or none was taken yet.
func (e *Entry) clusters() *openapi.RolloutClusters {
	rv := e.Ans.Rollout
	if rv == nil || rv.Baseline {
		return nil
	}
	return e.counts.Of(&rv.Rollout)
}

// BaseURL is the external URL, or the one the client used to reach us.
func BaseURL(externalURL string, r *http.Request) string {
	if externalURL != "" {
		return externalURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p != "" {
		if i := strings.IndexByte(p, ','); i >= 0 {
			p = p[:i]
		}
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "http" || p == "https" {
			scheme = p
		}
	}
	return scheme + "://" + r.Host
}

// ETagMatches implements If-None-Match's weak comparison (RFC 9110 13.1.2).
func ETagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		if part == "*" || strings.TrimPrefix(part, "W/") == want {
			return true
		}
	}
	return false
}

// IfMatchRevision reads If-Match as the channel state revision it was
// issued for (the number an ETag starts with). Absent or "*":
// resolver.AnyRevision, no check (last writer wins). The revision alone is compared, not the whole ETag:
// a scan that moves a following channel's version is not a conflicting
// write, and replicas that reloaded at different moments agree on revisions.
func IfMatchRevision(r *http.Request) (int64, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" || h == "*" {
		return resolver.AnyRevision, nil
	}
	bad := fmt.Errorf("%w: If-Match %q is not an ETag this server issued; GET the channel for a fresh one", resolver.ErrConflict, h)
	if strings.HasPrefix(h, "W/") || !strings.HasPrefix(h, `"`) || !strings.HasSuffix(h, `"`) || len(h) < 2 {
		return 0, bad
	}
	num, _, _ := strings.Cut(h[1:len(h)-1], "-")
	rev, err := strconv.ParseInt(num, 10, 64)
	if err != nil || rev < 0 {
		return 0, bad
	}
	return rev, nil
}
