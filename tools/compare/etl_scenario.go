package compare

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// etlChurnTimeout bounds the etl-churn scenario on one side: it takes
// about two seconds alone, longer beside the other scenarios under -race.
const etlChurnTimeout = 25 * time.Second

// etlChurnConfig is the etl-churn scenario's workload: one stage of two
// members over three partitions, a join and a leave, classic eager.
func etlChurnConfig() ETLConfig {
	return ETLConfig{Records: 200, Partitions: 3, Stages: 1, Members: 2, Churn: 2, Seed: 1,
		Heartbeat: 100 * time.Millisecond, Timeout: etlChurnTimeout}.withDefaults()
}

// etlChurnTopics are the scenario's topics by suffix: a source and an
// output for each mode.
func etlChurnTopics() map[string]int32 {
	cfg := etlChurnConfig()
	topics := map[string]int32{}
	for _, mode := range []string{"plain", "txn"} {
		for i := range cfg.Stages + 1 {
			topics[fmt.Sprintf("%s-%d", mode, i)] = cfg.Partitions
		}
	}
	return topics
}

// etlChurn: minicompare etl in small, classic eager (range), plainly and
// in transactions: what is missing, how many records were processed
// twice (plain) and how many reached the output twice (txn). How many
// minibroker processes twice depends on timing, so its documented answer
// is a pattern.
func etlChurn(ctx context.Context, s *Script) (string, error) {
	cfg := etlChurnConfig()
	var answers []string
	for _, tx := range []bool{false, true} {
		row := ETLRow{Protocol: ETLProtocols()[0], Transactional: tx}
		topics := make([]string, cfg.Stages+1)
		for i := range topics {
			topics[i] = fmt.Sprintf("%s-%s-%d", s.group, row.Mode(), i)
		}
		res := measureETL(ctx, cfg, row, s.addr, topics, s.group+"-"+row.Mode())
		if res.Err != nil {
			return "", res.Err
		}
		if res.In != cfg.Records {
			return "", fmt.Errorf("%s: wrote %d records of %d", row.Mode(), res.In, cfg.Records)
		}
		answers = append(answers, row.Mode()+": "+etlAnswer(res))
	}
	return strings.Join(answers, "; "), nil
}

// etlAnswer says what a run measured: how many records went missing,
// then how many were processed twice or more (plain) or reached the
// output twice (txn).
func etlAnswer(r ETLResult) string {
	if r.Row.Transactional {
		return fmt.Sprintf("%d missing, %d twice out", r.Missing, r.DupOut)
	}
	return fmt.Sprintf("%d missing, %d twice", r.Missing, r.Twice())
}
