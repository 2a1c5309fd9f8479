// One kafkajs consumer group member, driven by integration/clients/
// kafkajs_test.go. It subscribes to one topic, hands every record to the
// test as it consumes it, and reports what kafkajs tells it, one JSON
// object per line on stdout:
//
//   {"event":"join","memberId":...,"leaderId":...,"assignment":{"orders":[0,2]}}
//   {"event":"record","partition":0,"offset":"3","key":"key-003","value":"value-003"}
//   {"event":"commit","generation":2,"memberId":...,"partitions":[{"partition":0,"offset":"4"}]}
//   {"event":"reset","partition":1}     kafkajs's "Offset out of range, resetting to default offset"
//   {"event":"crash","error":"...","name":"...","restart":false}
//   {"event":"stopped"}
//
// Its own log (kafkajs's, at INFO) goes to stderr. It stops when stdin
// closes: consumer.disconnect() commits what it consumed, leaves the group
// and the process exits 0. A crash exits 3, without a restart.
//
// Usage: node member.js <bootstrap> <group> <topic> <client id> <earliest|latest>

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, groupId, topic, clientId, reset] = process.argv.slice(2)
if (!reset || (reset !== 'earliest' && reset !== 'latest')) {
  process.stderr.write('usage: node member.js <bootstrap> <group> <topic> <client id> <earliest|latest>\n')
  process.exit(2)
}

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n')

// The log goes to stderr; the line kafkajs writes when it resets a
// partition is also an event for the test.
const logCreator = () => ({ namespace, label, log }) => {
  const { message, timestamp, logger, ...rest } = log
  process.stderr.write(`${timestamp} ${label} [${namespace}] ${message} ${JSON.stringify(rest)}\n`)
  if (message === 'Offset out of range, resetting to default offset') {
    emit({ event: 'reset', partition: log.partition })
  }
}

const kafka = new Kafka({
  clientId,
  brokers: [bootstrap],
  logLevel: logLevel.INFO,
  logCreator,
  // A member that gives up ends the test quickly instead of retrying for
  // minutes.
  retry: { retries: 3, initialRetryTime: 100, restartOnFailure: async () => false },
})

const consumer = kafka.consumer({
  groupId,
  // The test's heartbeat: members learn of a rebalance at their next one.
  heartbeatInterval: 250,
  sessionTimeout: 10000,
  rebalanceTimeout: 10000,
  // Fetches that wait at most 100 ms for data, so heartbeats are not held
  // up behind them.
  maxWaitTimeInMs: 100,
})

const { GROUP_JOIN, COMMIT_OFFSETS, CRASH } = consumer.events
consumer.on(GROUP_JOIN, ({ payload }) =>
  emit({ event: 'join', memberId: payload.memberId, leaderId: payload.leaderId, assignment: payload.memberAssignment })
)
consumer.on(COMMIT_OFFSETS, ({ payload }) => {
  for (const t of payload.topics) {
    emit({ event: 'commit', generation: payload.groupGenerationId, memberId: payload.memberId, partitions: t.partitions })
  }
})
consumer.on(CRASH, ({ payload }) => {
  emit({ event: 'crash', name: payload.error.name, error: String(payload.error.message), restart: payload.restart })
  process.exitCode = 3
  process.stdin.destroy()
})

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await consumer.disconnect()
  emit({ event: 'stopped' })
}
process.stdin.on('end', stop)
process.stdin.on('close', stop)
process.stdin.resume()

const main = async () => {
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: reset === 'earliest' })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      emit({
        event: 'record',
        partition,
        offset: message.offset,
        key: message.key === null ? null : message.key.toString(),
        value: message.value === null ? null : message.value.toString(),
      })
    },
  })
}

main().catch(e => {
  emit({ event: 'crash', name: e.name, error: String(e.message), restart: false })
  process.exit(3)
})
