#!/bin/sh
# A CI gate on `nats-version-auditor check --format nagios`: one line with the status and perfdata
# for the job log, and the Nagios exit code turned into pass/fail.
#
#   NATS_URL=nats://nats.example:4222 NATS_CREDS=/path/sys.creds ./nats-version-gate.sh [check flags]
#
# Connection settings come from the environment, as natscli spells them (NATS_URL, NATS_CREDS,
# NATS_CONTEXT, NATS_USER/NATS_PASSWORD, NATS_CA, ...); extra arguments go to `check`, e.g.
# --account APP --stream ORDERS to narrow the asset findings to the deployed application's.
#
#   NATS_VERSION_AUDITOR  the binary (default: nats-version-auditor on PATH)
#   NATS_VERSION_FLOOR    the floor (default 2.14.0)
#   ALLOW_WARNING=1       let WARNING (exit 1: e.g. a NATS rolling upgrade in progress) pass
#
# Exits 0 when the gate passes, else the check's status (1 WARNING, 2 CRITICAL, 3 UNKNOWN).
set -u

auditor=${NATS_VERSION_AUDITOR:-nats-version-auditor}
floor=${NATS_VERSION_FLOOR:-2.14.0}

"$auditor" check --floor "$floor" --format nagios "$@"
rc=$?

case $rc in
0)
	echo "nats-version-gate: pass"
	exit 0
	;;
1)
	if [ "${ALLOW_WARNING:-0}" = 1 ]; then
		echo "nats-version-gate: pass (WARNING allowed)"
		exit 0
	fi
	echo "nats-version-gate: blocked (WARNING; ALLOW_WARNING=1 lets it pass)" >&2
	exit 1
	;;
2)
	echo "nats-version-gate: blocked (CRITICAL)" >&2
	exit 2
	;;
*)
	# 3 UNKNOWN, and anything else (the auditor did not run at all).
	echo "nats-version-gate: blocked (UNKNOWN, exit $rc)" >&2
	exit 3
	;;
esac
