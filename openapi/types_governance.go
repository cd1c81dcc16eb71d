package openapi

// The wire types of known risks, scheduled changes and freezes
// (CONTRACT sections 13 and 15).

import "time"

// ResolveRisk is a known risk on the edge from the current version to To.
type ResolveRisk struct {
	To       string `json:"to"`
	Name     string `json:"name"`
	Message  string `json:"message"`
	URL      string `json:"url"`
	Accepted bool   `json:"accepted"`
}

// RiskRequest is the body of PUT /api/v1/sources/{source}/risks/{name}.
type RiskRequest struct {
	Message  string   `json:"message"`
	URL      string   `json:"url,omitempty"`
	From     string   `json:"from"`
	To       string   `json:"to"`
	Clusters []string `json:"clusters,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

// Risk is a known risk of a source.
type Risk struct {
	Source    string    `json:"source"`
	Name      string    `json:"name"`
	Message   string    `json:"message"`
	URL       string    `json:"url"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Clusters  []string  `json:"clusters"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// RiskList is a source's known risks, by name.
type RiskList struct {
	Risks []Risk `json:"risks"`
}

// ChangeRequest is the body of POST /api/v1/channels/{name}/changes.
type ChangeRequest struct {
	Action   string `json:"action"` // pin or unpin
	Version  string `json:"version,omitempty"`
	Reason   string `json:"reason,omitempty"`
	At       string `json:"at"` // RFC 3339, in the future
	Force    bool   `json:"force,omitempty"`
	Rollback bool   `json:"rollback,omitempty"`
	// AllowExpired (admin only) schedules a pin of a version whose line
	// has expired.
	AllowExpired bool `json:"allow_expired,omitempty"`
}

// Change is a scheduled or pending change.
type Change struct {
	ID          int64      `json:"id"`
	Channel     string     `json:"channel"`
	Action      string     `json:"action"`
	Version     *string    `json:"version"`
	Reason      string     `json:"reason"`
	At          *time.Time `json:"at"`
	State       string     `json:"state"`
	RequestedBy string     `json:"requested_by"`
	CreatedAt   time.Time  `json:"created_at"`
	// Approvals needed and given; ExpiresAt ends a pending change.
	ApprovalsNeeded int              `json:"approvals_needed"`
	Approvals       []ChangeApproval `json:"approvals"`
	ExpiresAt       *time.Time       `json:"expires_at"`
	DecidedAt       *time.Time       `json:"decided_at"`
	Outcome         string           `json:"outcome"`
}

// ChangeApproval is one identity's decision on a pending change.
type ChangeApproval struct {
	Identity string    `json:"identity"`
	Approve  bool      `json:"approve"`
	At       time.Time `json:"at"`
	Reason   string    `json:"reason"`
}

// ChangeList is GET /api/v1/changes.
type ChangeList struct {
	Changes []Change `json:"changes"`
}

// FreezeRequest is the body of POST /api/v1/freezes.
type FreezeRequest struct {
	Channels []string `json:"channels"`
	From     string   `json:"from"`
	Until    string   `json:"until"`
	Reason   string   `json:"reason"`
}

// Freeze is a declared freeze.
type Freeze struct {
	ID        int64     `json:"id"`
	Channels  []string  `json:"channels"`
	From      time.Time `json:"from"`
	Until     time.Time `json:"until"`
	Reason    string    `json:"reason"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	Active    bool      `json:"active"`
}

// FreezeList is GET /api/v1/freezes.
type FreezeList struct {
	Freezes []Freeze `json:"freezes"`
}

// Evidence is what a channel's clusters say of one version
// (GET /api/v1/channels/{name}/evidence?version=V).
type Evidence struct {
	Version            string     `json:"version"`
	Told               int        `json:"told"`
	Adopted            int        `json:"adopted"`
	Stuck              int        `json:"stuck"`
	FirstTold          *time.Time `json:"first_told"`
	AdoptionP50Seconds *float64   `json:"adoption_p50_seconds"`
	Halts              int        `json:"halts"`
}

// EvidenceList is every version's evidence on a channel.
type EvidenceList struct {
	Versions []Evidence `json:"versions"`
}
