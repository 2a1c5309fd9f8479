package records

import "errors"

// The sentinels below are what the records package returns, always wrapped
// with detail (which partition, byte or field) and matched with errors.Is.
// The server's error table maps each to the Kafka error code named in its
// doc comment; nothing in this package knows the codes themselves.

// ErrCorruptMessage is a batch whose bytes do not check out: a CRC-32C that
// does not match, a batch shorter than its header, a compression codec we
// do not know, or compressed data that does not decompress. Kafka:
// CORRUPT_MESSAGE (LogValidator, DefaultRecordBatch.ensureValid).
var ErrCorruptMessage = errors.New("corrupt message")

// ErrInvalidRecord is a batch that is well formed but breaks a rule of
// Produce v3+: not exactly one batch, magic other than 2, a base offset
// other than 0, a record count or offset deltas that disagree with the
// records, a record whose length disagrees with its fields, a control
// batch, a negative base sequence from an idempotent producer. Kafka:
// INVALID_RECORD (ProduceRequest.validateRecords, LogValidator.validateBatch,
// DefaultRecord.readFrom).
var ErrInvalidRecord = errors.New("invalid record")

// ErrMessageTooLarge is a batch larger than Config.MaxMessageBytes (the
// whole batch, header included), or one whose records decompress to more
// than Config.MaxUncompressedBytes. Kafka: MESSAGE_TOO_LARGE
// (UnifiedLog.analyzeAndValidateRecords, RecordTooLargeException).
var ErrMessageTooLarge = errors.New("message too large")

// ErrUnknownPartition is a topic partition this log does not hold. Kafka:
// UNKNOWN_TOPIC_OR_PARTITION.
var ErrUnknownPartition = errors.New("unknown topic or partition")

// ErrTooManyPartitions is CreatePartitions past the partitions a Log on
// disk may hold open: each keeps its active segment file open, so more
// than half of the process's open-file limit would leave too few for
// connections, sealed segments and the broker's journals. Kafka has no
// such bound (its operators raise the limit): INVALID_PARTITIONS here,
// refused before anything is made.
var ErrTooManyPartitions = errors.New("too many partitions for the open-file limit")

// ErrOffsetOutOfRange is a read or lookup at an offset below the log start
// offset or above the high watermark. Kafka: OFFSET_OUT_OF_RANGE.
var ErrOffsetOutOfRange = errors.New("offset out of range")

// ErrOutOfOrderSequence is an idempotent batch whose first sequence does
// not follow the producer's last one (a gap, or a retry older than the
// five batches remembered), or that starts a new epoch at a sequence other
// than 0. Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER (ProducerAppendInfo.checkSequence).
var ErrOutOfOrderSequence = errors.New("out of order sequence number")

// ErrInvalidProducerEpoch is an idempotent batch whose producer epoch is
// lower than the last one seen for its producer id on the partition.
// Kafka: INVALID_PRODUCER_EPOCH (ProducerAppendInfo.checkProducerEpoch).
var ErrInvalidProducerEpoch = errors.New("invalid producer epoch")

// ErrInvalidTxnState is an idempotent, non-transactional batch from a
// producer that holds a transaction open on the partition: its
// transactional records and this one would share one sequence, and the
// producer's next acknowledged record would be answered as a duplicate.
// Kafka: INVALID_TXN_STATE (ProducerAppendInfo.appendDataBatch, "Expected
// transactional write"). Nothing of the batch is stored.
var ErrInvalidTxnState = errors.New("non-transactional batch during the producer's transaction")

// ErrUnknownProducerID is an idempotent batch whose producer id this
// broker never handed out (InitProducerId): at or above the durable
// high-water mark of reserved ids. Kafka has no such check, since its ids
// come from the controller and never from the log; here allocation must
// not be steerable by a batch. Kafka's code for a producer id the broker
// does not map: INVALID_PRODUCER_ID_MAPPING.
var ErrUnknownProducerID = errors.New("unknown producer id")

// ErrInvalidTimestamp is a record whose timestamp lies further in the past
// or future than Config allows, or a batch that claims LogAppendTime.
// Kafka: INVALID_TIMESTAMP (LogValidator.validateTimestamp).
var ErrInvalidTimestamp = errors.New("invalid timestamp")

// ErrTransactional is a transactional batch in a produce request that
// names no transactional id; the server answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's KafkaApis does. The
// records package does not return it itself.
var ErrTransactional = errors.New("transactional batch without a transactional id")

// ErrStorage is a failure to write or sync a partition's files. The
// append that gets it was not stored: the partition's files and memory were
// rolled back to the last durable batch. Kafka: KAFKA_STORAGE_ERROR.
var ErrStorage = errors.New("storage error")

// ErrClosed is returned for any call on a Log after Close.
var ErrClosed = errors.New("log closed")

// ErrCorrupt is damage Open will not repair: a bad batch in an older
// segment, a bad batch followed by valid ones, a gap between offsets, a
// segment that is not a regular file, an unreadable producer id file. The
// error names the file and byte offset; the files are left untouched.
var ErrCorrupt = errors.New("corrupt log")

// ErrDataLoss is Open finding less than was acknowledged: a partition
// whose high watermark is below the one the checkpoint recorded (its
// newest segment deleted or truncated), whose log start is above it (its
// oldest segments deleted, not by retention), or whose directory is gone.
// It also covers a damaged tail of the newest segment that recovery would
// cut below the checkpoint's high watermark. The error names each
// partition, file and what is missing; nothing is changed on disk.
// Config.AcceptDataLoss starts anyway.
var ErrDataLoss = errors.New("acknowledged records missing")
