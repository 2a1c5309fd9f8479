package protocol

// ptr returns a pointer to s.
func ptr(s string) *string { return &s }
