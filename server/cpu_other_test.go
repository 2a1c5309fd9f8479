//go:build !unix

package server

import "time"

// processCPU is zero where getrusage is missing: the metric reads 0.
func processCPU() time.Duration { return 0 }
