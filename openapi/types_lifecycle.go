package openapi

import "time"

// VersionLifecycle is a version's line and where it stands: the version
// JSON's "lifecycle".
type VersionLifecycle struct {
	Line           string     `json:"line"`
	Classification string     `json:"classification"` // supported | deprecated | expired
	End            *time.Time `json:"end"`
	Successor      *string    `json:"successor"`
}

// LifecycleLine is one line of GET /api/v1/sources/{s}/lifecycle.
type LifecycleLine struct {
	Line           string     `json:"line"`
	Release        *time.Time `json:"release"`
	DeprecatedFrom *time.Time `json:"deprecated_from"`
	End            *time.Time `json:"end"`
	Classification string     `json:"classification"`
	// Clusters is how many active clusters report a version of the line,
	// over every channel of the source.
	Clusters int `json:"clusters"`
}

// SourceLifecycle is GET /api/v1/sources/{s}/lifecycle: lines newest first.
type SourceLifecycle struct {
	Lines []LifecycleLine `json:"lines"`
}

// Running is what a channel object says of the version the asking cluster
// reports, when its line is deprecated or expired.
type Running struct {
	Version        string     `json:"version"`
	Classification string     `json:"classification"`
	End            *time.Time `json:"end"`
}

// ChannelLifecycle is a channel object's "lifecycle" when the version it
// answers is on a deprecated or expired line.
type ChannelLifecycle struct {
	Classification string     `json:"classification"`
	End            *time.Time `json:"end"`
}
