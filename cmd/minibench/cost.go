package main

import (
	"fmt"
	"strings"
)

// costScenarios are the scenarios whose server CPU per request and per
// MB the cost table sets side by side: where minibroker's CPU per
// operation decides its rate (durable commits, batched durable produce),
// with heartbeats and one record at a time beside them.
var costScenarios = []string{"hb-c64", "commit-c64", "commit-g100x10", "produce-1KiB", "produce-sync"}

// renderCost writes the cost table: for each cost scenario the run
// measured, each server's CPU per request answered and per MB of record
// values, and minibroker's over the row's.
func renderCost(b *strings.Builder, meta runMeta, outcomes []*outcome) {
	var rows []*outcome
	for _, name := range costScenarios {
		for _, o := range outcomes {
			if o.sc.Name == name {
				rows = append(rows, o)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n### Server CPU per request and per MB\n\n")
	b.WriteString(meta.machine() + " ")
	b.WriteString("CPU/req is the server's user+system CPU in the windows over the requests it answered (for produce, the Produce requests the kgo client read answers to); CPU/MB is over the MB (10^6 bytes) of record values, `-` for scenarios that carry none. `mb ÷ this` divides minibroker's figure by the row's: below 1 means minibroker spends less.\n\n")
	b.WriteString("| scenario | server | ops/s | req/s | CPU/req | CPU/MB | mb ÷ this CPU/req | mb ÷ this CPU/MB |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, o := range rows {
		mb := o.results[serverMinibroker]
		first := true
		for _, server := range allServers {
			r := o.results[server]
			if r == nil {
				continue
			}
			name := ""
			if first {
				name, first = "**"+o.sc.Name+"**", false
			}
			perMB, ratioReq, ratioMB := "-", "", ""
			if r.Bytes > 0 {
				perMB = fmtDur(r.CPUPerMB())
			}
			if server != serverMinibroker && mb != nil {
				ratioReq = fmtRatio(float64(mb.CPUPerRequest()), float64(r.CPUPerRequest()))
				if r.Bytes > 0 && mb.Bytes > 0 {
					ratioMB = fmtRatio(float64(mb.CPUPerMB()), float64(r.CPUPerMB()))
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, server, fmtCount(r.MedianRate()), fmtCount(r.RequestRate()),
				fmtDur(r.CPUPerRequest()), perMB, ratioReq, ratioMB)
		}
	}
}
