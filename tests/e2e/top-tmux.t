#!/usr/bin/env bash
# `docker flame top` on a real terminal (tmux, 160x40) against the fixture JVM: the hot method on
# screen within 3 s of the first refresh, `t` switches the sort, Enter shows callers, `q` quits
# and restores the terminal, and nothing is left (no sidecar, no docker-flame mount in the
# target). Then the terminal closing (tmux kill-session = SIGHUP) must clean up as well.
. "$(dirname "$0")/top-lib.sh"
command -v tmux >/dev/null || { skip_or_fail "tmux missing (apt-get install tmux)"; done_testing; }

SOCK=$TMP/tmux.sock
tm() { tmux -S "$SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; _cleanup' EXIT
screen() { tm capture-pane -p -t "$1" 2>/dev/null; }
on_screen() { screen "$1" | grep -Eq -- "$2"; }

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
hp=$(host_pid "$fx")
HOT='FlameFixture\.(countPrimes|isPrime)'

t_start=$(now_ms)
tm new-session -d -x 160 -y 40 -s top \
    "docker flame top $fx --interval 1s 2>$TMP/err; echo \$? >$TMP/exit; echo TOP-EXITED; sleep 600"
# first refresh: the header counts at least one window (setup may import the image: generous)
if wait_for 120 on_screen top '\([1-9][0-9]* x 1\.0s\)'; then
    t_first=$(now_ms)
    ok "first refresh on screen $(( t_first - t_start )) ms after the start"
else
    nok "first refresh on screen"; fdiag "$(screen top)" "$(cat "$TMP/err" 2>/dev/null)"
    done_testing
fi
if wait_for 3 on_screen top "$HOT"; then
    ok "hot method on screen $(( $(now_ms) - t_first )) ms after the first refresh"
else
    nok "hot method on screen within 3 s of the first refresh"; fdiag "$(screen top)"
fi
like "$(screen top)" 'JVMs: 1' "header names the JVM count"
like "$(screen top)" 'sort: self' "sorted by self at start"
tm send-keys -t top t
if wait_for 5 on_screen top 'sort: total'; then ok "t: sort label says total"; else nok "t: sort label says total"; fdiag "$(screen top)"; fi
tm send-keys -t top Enter
if wait_for 5 on_screen top 'callers of '; then ok "Enter: callers view"; else nok "Enter: callers view"; fdiag "$(screen top)"; fi
tm send-keys -t top Escape
wait_for 5 on_screen top 'METHOD' && ok "Esc: back to methods" || nok "Esc: back to methods"
tm send-keys -t top s
wait_for 5 on_screen top 'sort: self' && ok "s: sort label says self" || nok "s: sort label says self"

t_q=$(now_ms)
tm send-keys -t top q
if wait_for 60 test -s "$TMP/exit"; then
    is "$(cat "$TMP/exit")" 0 "q: exit status 0 ($(( $(now_ms) - t_q )) ms to exit)"
else
    nok "q: exited within 60 s"; fdiag "$(screen top)"
fi
diag "$(cat "$TMP/err")"
# the terminal is back to normal: the shell's line is visible, the ncurses screen is gone
wait_for 5 on_screen top 'TOP-EXITED' && ok "terminal restored after q" || { nok "terminal restored after q"; fdiag "$(screen top)"; }
unlike "$(screen top)" 'sort: (self|total)' "no ncurses leftovers on the screen"
is "$(sidecars_of "$fid")" 0 "q: no sidecar left"
is "$(flame_mounts "$hp")" 0 "q: no docker-flame mount left in the target"
tm kill-session -t top

# The terminal closes under a running top: SIGHUP -> the abort path, still restored.
rm -f "$TMP/exit"
tm new-session -d -x 160 -y 40 -s hup "docker flame top $fx --interval 1s 2>$TMP/err2"
wait_for 120 on_screen hup '\([1-9][0-9]* x 1\.0s\)' && ok "second top running" || { nok "second top running"; fdiag "$(screen hup)"; }
tm kill-session -t hup
no_sidecar() { [ "$(sidecars_of "$fid")" -eq 0 ]; }
no_mount() { [ "$(flame_mounts "$hp")" -eq 0 ]; }
if wait_for 60 no_sidecar; then ok "SIGHUP: sidecar removed"; else nok "SIGHUP: sidecar removed"; fdiag "$(cat "$TMP/err2")"; fi
wait_for 10 no_mount && ok "SIGHUP: no docker-flame mount left" || nok "SIGHUP: no docker-flame mount left"
like "$(docker inspect -f '{{.State.Running}}' "$fx")" true "the fixture JVM still runs"
done_testing
