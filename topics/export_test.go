package topics

// SetStep sets the hook run after each step of a delete; only a test's
// child process, which runs one test, sets it.
func SetStep(fn func(string)) { step = fn }
