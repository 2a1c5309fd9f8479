#!/usr/bin/env bash
# kcat against a Kafka-protocol broker: produce three orders, read them
# through a consumer group, list the offsets the group committed.
#
#   make run                                  # minibroker on 127.0.0.1:9092
#   BROKER=127.0.0.1:9092 examples/kcat/demo.sh
#
# It writes to a topic of its own, kcat-demo (TOPIC=), which the broker
# creates on first use with one partition (and logs a warning, as for any
# topic a client creates by naming it), so it reads back only its own
# records: the walk-through's orders are not touched.
#
# Needs kcat (Debian: apt-get install kcat; scripts/kcat.sh does it).
set -euo pipefail
BROKER=${BROKER:-127.0.0.1:9092}
GROUP=${GROUP:-kcat-demo}
TOPIC=${TOPIC:-kcat-demo}

# 1. Three keyed records, key:value.
printf 'order-1:espresso\norder-2:latte\norder-3:mocha\n' |
	kcat -b "$BROKER" -P -t "$TOPIC" -K :

# 2. Read them through the group. -e exits once every assigned partition is
#    read to its end; kcat commits what it printed as it closes.
kcat -b "$BROKER" -G "$GROUP" -X auto.offset.reset=earliest -q -e \
	-f 'consumed %k=%s partition %p offset %o\n' "$TOPIC"

# 3. The group's committed offsets (-1: none). kcat has no command that
#    lists them, but a member's debug log shows the broker's OffsetFetch
#    answer; -e exits at once, as nothing is left to read.
kcat -b "$BROKER" -G "$GROUP" -q -e -d cgrp,topic "$TOPIC" 2>&1 >/dev/null |
	sed -n 's/.*OffsetFetchResponse: \([^ ]*\) \[\([0-9]*\)\] offset \([-0-9]*\).*/committed \1 \2 \3/p' |
	sort -u
