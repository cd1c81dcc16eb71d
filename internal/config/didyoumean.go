package config

// DidYouMean is the configuration's typo advice for other names a person
// types (the command line's flags): " (did you mean "x"?)" or "".
func DidYouMean(name string, known []string) string { return suggest(name, known) }
