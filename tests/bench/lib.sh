# tests/bench/lib.sh: sourced by run.sh and discovery.sh. Logging, number
# formatting, and the CPU accounting that tells whether other processes
# competed with a phase. The sourcing script defines own_pids: the pids of
# its long-running processes (daemons), whose CPU counts as its own.
# shellcheck shell=bash

log() { echo "bench: $*" >&2; }

# ms with 3 decimals from seconds
ms() { awk -v s="$1" 'BEGIN { printf "%.3f", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "n/a" }'; }
# "N× faster" or "N× slower": hostkeeper time $2 against the alternative's $1.
speedup() { awk -v a="$1" -v b="$2" 'BEGIN { if (a <= 0 || b <= 0) print "n/a"; else if (a >= b) printf "%.1f× faster", a / b; else printf "%.1f× slower", b / a }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
yesno() { if "$@"; then echo yes; else echo no; fi; }
thousands() { awk -v x="$1" 'BEGIN { printf "%d", x + 0.5 }' | sed -E ':a;s/^([0-9]+)([0-9]{3})/\1,\2/;ta'; }

# CPU accounting: the whole machine's busy time (/proc/stat) minus what this
# benchmark's processes used: this shell and everything it has waited for
# (`times`), and own_pids (/proc/PID/stat). In ticks of 1/100 s.
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat; }
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
OWN_TICKS=0
measure_own() {  # sets OWN_TICKS; must run in this shell, not in $(...)
    local f=$HK_TEST_ROOT/times.$$ waited pid
    times >"$f"  # a builtin: this shell and everything it has waited for
    waited=$(awk '{ for (i = 1; i <= NF; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] } }
                  END { printf "%d", t * 100 }' "$f")
    OWN_TICKS=$waited
    for pid in $(own_pids); do OWN_TICKS=$(( OWN_TICKS + $(proc_ticks "$pid") )); done
}
PHASE_T0="" PHASE_MACHINE0="" PHASE_OWN0="" PHASE_OTHERS=""
phase_begin() {
    PHASE_T0=$(date +%s.%N)
    PHASE_MACHINE0=$(machine_ticks)
    measure_own
    PHASE_OWN0=$OWN_TICKS
}
# Sets PHASE_OTHERS: percent of the machine (all CPUs) that other processes
# used since phase_begin. The daemons must have run for the whole phase.
# shellcheck disable=SC2034  # PHASE_OTHERS is read by the sourcing script
phase_end() {
    local machine
    machine=$(machine_ticks)
    measure_own
    PHASE_OTHERS=$(awk -v t0="$PHASE_T0" -v t="$(date +%s.%N)" -v n="$(nproc)" -v m=$(( machine - PHASE_MACHINE0 )) \
        -v o=$(( OWN_TICKS - PHASE_OWN0 )) 'BEGIN { x = (m - o) / ((t - t0) * 100 * n) * 100; if (x < 0) x = 0; printf "%.0f", x }')
}
