package admin

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/server"
)

// WatchAuthentication adds the Kafka server's failed SASL authentications
// to the series, read from stats at every scrape, one series per
// mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, and none for a failure
// before a mechanism was chosen); none with SASL off:
//
//	minibroker_failed_authentication_total{mechanism}  counter
//
// Kafka's Selector counts the same as failed-authentication-total.
func (m *Metrics) WatchAuthentication(stats func() server.AuthStats) {
	m.registry.MustRegister(authCollector{stats: stats})
}

var failedAuthenticationDesc = prometheus.NewDesc("minibroker_failed_authentication_total",
	"Failed SASL authentications (a wrong password or unknown user, a malformed SASL message, an unknown mechanism, a request before authentication), by mechanism; each answer and close was held back by --connection-failed-authentication-delay.",
	[]string{"mechanism"}, nil)

// authCollector reports server.AuthStats at each scrape.
type authCollector struct {
	stats func() server.AuthStats
}

func (c authCollector) Describe(ch chan<- *prometheus.Desc) { ch <- failedAuthenticationDesc }

func (c authCollector) Collect(ch chan<- prometheus.Metric) {
	failures := c.stats().Failures
	mechanisms := make([]string, 0, len(failures))
	for m := range failures {
		mechanisms = append(mechanisms, m)
	}
	slices.Sort(mechanisms)
	for _, m := range mechanisms {
		ch <- prometheus.MustNewConstMetric(failedAuthenticationDesc, prometheus.CounterValue, float64(failures[m]), m)
	}
}
