//go:build !race

package server

// raceEnabled: the race detector instruments this build, and its
// allocations are not the ones a broker makes.
const raceEnabled = false
