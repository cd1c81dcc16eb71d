#!/bin/sh
# What may a juju controller on 2.9.42 upgrade to, and by what path? This is
# the question `juju upgrade-controller --dry-run` answers; Tidemark answers it
# from the jujud-operator tags it indexed (deploy/examples/tidemark.yaml).
#
#   TIDEMARK=http://localhost:8080 deploy/examples/juju-dry-run.sh 2.9.42 released
set -eu
TIDEMARK=${TIDEMARK:-http://localhost:8080}
CURRENT=${1:-2.9.42}
STREAM=${2:-released}

# The JSON answer: available versions (ascending), the next target (never
# skipping a minor, never crossing a major) and the whole path.
curl -fsS "$TIDEMARK/api/v1/resolve?source=jujud-operator&current=$CURRENT&stream=$STREAM"
echo

# The same through a channel: its stream, constraint and filters apply.
curl -fsS "$TIDEMARK/api/v1/resolve?source=jujud-operator&current=$CURRENT&channel=2.9"
echo

# For a person, the CLI prints the same answer as text:
#   tidemark resolve --server "$TIDEMARK" --source jujud-operator --current "$CURRENT" --stream "$STREAM"
# A specific target is checked rather than picked; a skip or downgrade is a 422
# whose body says why:
#   curl -sS "$TIDEMARK/api/v1/resolve?source=jujud-operator&current=$CURRENT&target=3.6.0"
