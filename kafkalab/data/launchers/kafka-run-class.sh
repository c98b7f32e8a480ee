#!/usr/bin/env bash
# kafkalab launcher: runs one Kafka main class with libs/* on the classpath.
# Part of a Kafka distribution assembled by kafkalab from Maven Central jars. It reads
# the same environment as Apache Kafka's own bin/kafka-run-class.sh:
#   JAVA_HOME, KAFKA_HEAP_OPTS (default -Xmx256M), KAFKA_JVM_PERFORMANCE_OPTS,
#   KAFKA_OPTS, KAFKA_LOG4J_OPTS (default config/tools-log4j2.yaml in Kafka 4.x, which logs
#   through log4j2, config/tools-log4j.properties in 3.x), LOG_DIR
#   (default logs/), JMX_PORT, KAFKA_JMX_OPTS, CLASSPATH (appended to libs/*).
set -e

if [ $# -lt 1 ]; then
  echo "USAGE: $0 [-daemon] [-name servicename] [-loggc] classname [opts]" >&2
  exit 1
fi

base_dir=$(cd "$(dirname "$0")/.." && pwd)

CLASSPATH="$base_dir/libs/*${CLASSPATH:+:$CLASSPATH}"

LOG_DIR=${LOG_DIR:-$base_dir/logs}
if [ ! -d "$LOG_DIR" ]; then
  mkdir -p "$LOG_DIR"
fi

if [ -f "$base_dir/config/tools-log4j2.yaml" ]; then
  KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:-"-Dlog4j2.configurationFile=$base_dir/config/tools-log4j2.yaml"}
else
  KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:-"-Dlog4j.configuration=file:$base_dir/config/tools-log4j.properties"}
fi
KAFKA_LOG4J_OPTS="-Dkafka.logs.dir=$LOG_DIR $KAFKA_LOG4J_OPTS"

KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:-"-Xmx256M"}
KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:-"-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true"}

KAFKA_JMX_OPTS=${KAFKA_JMX_OPTS:-"-Dcom.sun.management.jmxremote -Dcom.sun.management.jmxremote.authenticate=false -Dcom.sun.management.jmxremote.ssl=false"}
if [ -n "$JMX_PORT" ]; then
  KAFKA_JMX_OPTS="$KAFKA_JMX_OPTS -Dcom.sun.management.jmxremote.port=$JMX_PORT"
  if ! echo "$KAFKA_JMX_OPTS" | grep -qF -- "-Dcom.sun.management.jmxremote.rmi.port="; then
    KAFKA_JMX_OPTS="$KAFKA_JMX_OPTS -Dcom.sun.management.jmxremote.rmi.port=$JMX_PORT"
  fi
fi

if [ -n "$JAVA_HOME" ]; then
  JAVA="$JAVA_HOME/bin/java"
else
  JAVA="java"
fi

DAEMON_MODE=false
DAEMON_NAME=""
GC_LOG_ENABLED=false
while [ $# -gt 0 ]; do
  case "$1" in
    -daemon) DAEMON_MODE=true; shift ;;
    -name) DAEMON_NAME=$2; shift 2 ;;
    -loggc) GC_LOG_ENABLED=true; shift ;;
    *) break ;;
  esac
done

KAFKA_GC_LOG_OPTS=""
if [ "$GC_LOG_ENABLED" = true ] && [ -n "$DAEMON_NAME" ]; then
  KAFKA_GC_LOG_OPTS="-Xlog:gc*:file=$LOG_DIR/$DAEMON_NAME-gc.log:time,tags:filecount=10,filesize=100M"
fi

# The option strings hold several words each, as in Apache Kafka's script.
# shellcheck disable=SC2086
if [ "$DAEMON_MODE" = true ]; then
  CONSOLE_OUTPUT_FILE="$LOG_DIR/${DAEMON_NAME:-kafka}.out"
  nohup "$JAVA" $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_GC_LOG_OPTS $KAFKA_JMX_OPTS \
    $KAFKA_LOG4J_OPTS -cp "$CLASSPATH" $KAFKA_OPTS "$@" >"$CONSOLE_OUTPUT_FILE" 2>&1 </dev/null &
else
  exec "$JAVA" $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_GC_LOG_OPTS $KAFKA_JMX_OPTS \
    $KAFKA_LOG4J_OPTS -cp "$CLASSPATH" $KAFKA_OPTS "$@"
fi
