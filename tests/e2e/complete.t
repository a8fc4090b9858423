#!/usr/bin/env bash
# Shell completion through the real Docker CLI (docs/COMPLETION.md): `docker __complete flame ...`
# as bash, zsh and fish run it (verbs, flags, --format values, palettes, files, running containers
# with the JVM ones first, stored containers and ranges), the plugin quiet and quick when the
# engine is down or hangs, Debian's CLI 20.10 unaffected, and a real bash in tmux with Docker's
# completion scripts (CLI 28's `docker completion bash`, and Debian's for CLI 20.10, which runs
# the plugin itself): `docker flame <Tab><Tab>` shows the verbs and the fixture's name.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers"
plugin_env
FLAME=$BUILD/docker-flame
GEN=$BUILD/store-gen
[ -x "$FLAME" ] && [ -x "$GEN" ] || bail "build first (make): $FLAME, $GEN"
# The CLI that delegates completion (>= 23): the first such docker in PATH, put first for the
# whole test (also when the suite runs with Debian's CLI 20.10 first, as CI's second run does;
# the 20.10 checks below name /usr/bin/docker themselves).
cli_major() { "$1" --version 2>/dev/null | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p'; }
dcli=
for d in $(type -ap docker); do
    m=$(cli_major "$d")
    if [ -n "$m" ] && [ "$m" -ge 23 ]; then dcli=$d; break; fi
done
if [ -z "$dcli" ]; then
    skip_or_fail "no docker CLI >= 23 in PATH (completion is delegated to plugins from 23 on)"
    done_testing
fi
PATH=$(dirname "$dcli"):$PATH
export PATH
diag "completion through $dcli (Docker $(cli_major "$dcli"))"
ensure_fixture_image || bail "cannot build the fixture image"
export DOCKER_FLAME_STORE=$TMP/profiles.db
cd "$TMP" || bail "no scratch dir"

# a name only this test has, so other containers on the engine do not matter
tag=c$$
jvm=$(fixture pid1 "${tag}-jvm") || bail "fixture pid1 did not start"
nojvm=$(fixture nojvm "${tag}-idle") || bail "fixture nojvm did not start"
"$GEN" --store "$DOCKER_FLAME_STORE" --container "${tag}-web" --samples 100 --start -30m --windows 60 >/dev/null ||
    bail "store-gen failed"

comp() { docker __complete flame "$@" 2>/dev/null; }
names() { comp "$@" | cut -f1; }
directive() { comp "$@" | tail -1; }

out=$(comp "")
like "$out" $'\n''diff'$'\t''differential flame graph' "'docker flame <Tab>': verbs with their summaries"
for v in fold render diff merge gc top record show ls prune; do
    printf '%s\n' "$out" | cut -f1 | grep -qx "$v" || nok "verb $v offered"
done
ok "all ten verbs offered"
like "$out" "${tag}-jvm"$'\t'"JVM, flame-fixture-jvm" "the JVM container, described as one"
first=$(printf '%s\n' "$out" | cut -f1 | grep "^${tag}-" | head -1)
is "$first" "${tag}-jvm" "the container running a JVM comes before the idle one"
is "$(printf '%s\n' "$out" | tail -1)" ":36" "directive: no file names, order kept (4|32)"
unlike "$(comp "")" "flame-sidecar|__complete|no such container" "no error text among the candidates"
is "$(names "${tag}-i" | tr '\n' ' ')" "${tag}-idle :36 " "a typed prefix filters the containers"

is "$(names diff --format "" | tr '\n' ' ')" "svg folded pprof :4 " "diff --format: its three formats (no speedscope)"
is "$(names --format "" | tr '\n' ' ')" "svg folded speedscope pprof :4 " "--format: four formats"
is "$(names --format=svg,f | tr '\n' ' ')" "--format=svg,folded :4 " "--format=svg,f (a list, one word)"
is "$(names show --colors "" | grep -vc '^:')" 15 "--colors: the 15 palettes"
is "$(names render --bgcolors gr | tr '\n' ' ')" "green grey :4 " "render --bgcolors gr"
is "$(comp -o "")" ":0" "-o: nothing but the shell's file names (directive 0)"
is "$(comp fold "")" ":0" "fold FILE: file names"
is "$(directive -d "")" ":4" "-d DURATION: no file names"
out=$(names top --)
like "$out" $'^--interval\n' "top --<Tab>: its flags from its table"
unlike "$out" "--colors" "top has no graph options"
is "$(names gc "" | tr '\n' ' ')" ":4 " "gc takes no operands"

# the profile store: names for show/ls, ranges for diff/merge
is "$(names show "${tag}" | tr '\n' ' ')" "${tag}-web :4 " "show: the stored container"
out=$(comp diff "${tag}-w")
is "$(printf '%s\n' "$out" | cut -f1 | tr '\n' ' ')" "${tag}-web@ :34 " "diff: the stored name with its @, no space after it"
out=$(names diff "${tag}-web@")
like "$out" "^${tag}-web@-15m"$'\n' "diff NAME@: the last 15 minutes"
range=$(printf '%s\n' "$out" | grep '\.\.' | head -1)
like "$range" "^${tag}-web@[0-9-]+T[0-9:]+Z\.\.[0-9-]+T[0-9:]+Z$" "diff NAME@: the whole stored span"
"$FLAME" merge "$range" -o all.folded 2>merge.err
okif $? "the offered range is accepted by merge"
like "$(cat merge.err)" "60 windows|merged|wrote" "and covers the stored windows"
is "$(comp diff ./ | tail -1)" ":0" "diff ./: a path, file names"
is "$(comp diff zzz-none | tail -1)" ":0" "diff with nothing matching: file names (an input may be a file)"

# failures print nothing but the protocol, at once
out=$(DOCKER_HOST=unix://$TMP/none.sock "$FLAME" __complete flame "" 2>err.txt)
is "$(printf '%s\n' "$out" | tail -1)" ":36" "engine down: still the verbs and the directive"
is "$(printf '%s\n' "$out" | grep -c "${tag}")" 0 "engine down: no container"
is "$(cat err.txt)" "" "engine down: nothing on stderr"
python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)   # accept, never answer
' "$TMP/hang.sock" &
hang=$!
wait_until 10 test -S "$TMP/hang.sock" || nok "the hanging engine's socket is there"
t0=$(date +%s%N)
out=$(DOCKER_HOST=unix://$TMP/hang.sock timeout 20 "$FLAME" __complete flame "" 2>err.txt)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill "$hang" 2>/dev/null; wait "$hang" 2>/dev/null
is "$(printf '%s\n' "$out" | tail -1)" ":36" "engine hangs: the verbs and the directive"
okif $(( ms < 5000 ? 0 : 1 )) "engine hangs: answered in ${ms} ms (capped at 1.5 s per request)"
is "$(cat err.txt)" "" "engine hangs: nothing on stderr"
DOCKER_FLAME_STORE=$TMP/missing/p.db "$FLAME" __complete flame show "" >/dev/null 2>&1
check "a missing store is not created by completion" test ! -e "$TMP/missing"

# Debian's bash script for CLI 20.10 runs the plugin itself: `docker-flame __completeNoDesc WORDS`
is "$("$FLAME" __completeNoDesc diff --format '' | tr '\n' ' ')" "svg folded pprof :4 " \
    "__completeNoDesc without the plugin's name (Debian's CLI 20.10 script)"
is "$("$FLAME" __completeNoDesc "${tag}-j" | head -1)" "${tag}-jvm" "__completeNoDesc: names only"

# A store's labels are anyone's text (a shared store file, one received from someone): a stored
# name that compgen -W would run is never offered, through Debian's CLI 20.10 script itself
# (its __docker_complete_plugin runs COMPREPLY=( $(compgen -W "$result" ...) )).
evil='$(touch${IFS}'"$TMP"'/pwned)'
"$GEN" --store "$TMP/evil.db" --container "$evil" --samples 10 --start -5m --windows 2 >/dev/null &&
    "$GEN" --store "$TMP/evil.db" --container "${tag}-ok" --samples 10 --start -5m --windows 2 >/dev/null ||
    bail "store-gen failed"
out=$("$FLAME" __completeNoDesc show --store "$TMP/evil.db" "")
unlike "$out" 'touch' "a stored name with \$(...) is not offered"
like "$out" "^${tag}-ok"$'\n' "the store's other name is"
unlike "$("$FLAME" __complete flame diff --store "$TMP/evil.db" "" 2>/dev/null; DOCKER_FLAME_STORE=$TMP/evil.db "$FLAME" __complete flame diff "" 2>/dev/null)" 'touch' \
    "nor its NAME@ form for diff"
if [ -f /usr/share/bash-completion/completions/docker ]; then
    reply=$(STORE=$TMP/evil.db FLAME=$FLAME bash -c '
        . /usr/share/bash-completion/bash_completion >/dev/null 2>&1
        . /usr/share/bash-completion/completions/docker >/dev/null 2>&1
        words=(docker flame show --store "$STORE" "")
        __docker_complete_plugin "$FLAME"
        printf "%s\n" "${COMPREPLY[@]}"' 2>&1)
    check "Debian's script: Tab after show --store EVIL runs nothing" test ! -e "$TMP/pwned"
    like "$reply" "${tag}-ok" "Debian's script: the store's other name is offered"
else
    skip_or_fail "no Debian docker bash completion script (package docker.io)"
fi

# Debian's CLI 20.10 (no plugin completion): the plugin works as before
if [ -x /usr/bin/docker ] && /usr/bin/docker --version | grep -q ' 20\.'; then
    out=$(PATH=/usr/bin:$PATH docker flame --help 2>&1)
    okif $? "CLI 20.10: docker flame --help"
    like "$out" "Other commands:" "CLI 20.10: the help text"
    is "$(PATH=/usr/bin:$PATH docker flame --version 2>&1)" "docker-flame version $VERSION" "CLI 20.10: --version"
    PATH=/usr/bin:$PATH docker __complete flame "" >/dev/null 2>&1
    okif $? "CLI 20.10: its own __complete still answers"
    like "$(PATH=/usr/bin:$PATH docker flame nosuch-$tag 2>&1)" "no such container" "CLI 20.10: a profile still runs"
else
    skip_or_fail "no Debian docker CLI 20.10 at /usr/bin/docker"
fi

# A real bash with Docker's completion script (cobra's, from `docker completion bash`, which
# needs the bash-completion package).
if ! command -v tmux >/dev/null || [ ! -f /usr/share/bash-completion/bash_completion ]; then
    skip_or_fail "tmux or bash-completion missing (install.sh --test-deps)"
    done_testing
fi
SOCK=$TMP/tmux.sock
tm() { tmux -S "$SOCK" "$@"; }
lib_cleanup_extra() { tm kill-server 2>/dev/null; }
screen() { tm capture-pane -p -t sh 2>/dev/null; }
on_screen() { screen | grep -Eq -- "$1"; }
docker completion bash >docker.bash
printf '%s\n' 'PS1="$ "' '. /usr/share/bash-completion/bash_completion' ". $TMP/docker.bash" \
    'echo RC-READY' >rc.bash
tm new-session -d -x 200 -y 50 -s sh "bash --noprofile --rcfile $TMP/rc.bash -i"
wait_until 20 on_screen 'RC-READY' || { nok "bash started"; fdiag "$(screen)"; done_testing; }
tm send-keys -t sh 'docker flame ' Tab Tab
if wait_until 20 on_screen "${tag}-jvm"; then ok "docker flame <Tab><Tab>: the fixture's name on screen"; else
    nok "docker flame <Tab><Tab>: the fixture's name on screen"; fdiag "$(screen)"; fi
s=$(screen)
like "$s" "record" "the verbs on screen"
like "$s" "prune" "all of them"
unlike "$s" "no such container|__complete" "no error on screen"
tm send-keys -t sh C-u 'docker flame diff --format ' Tab Tab
if wait_until 20 on_screen 'folded +pprof +svg'; then ok "diff --format <Tab><Tab>: its formats"; else
    nok "diff --format <Tab><Tab>: its formats"; fdiag "$(screen)"; fi
tm send-keys -t sh C-u 'clear' Enter
wait_until 10 eval '! on_screen folded'
# a key typed after the Tab is handled after the completion: "Z" shows what Tab inserted
tm send-keys -t sh 'docker flame --colors ja' Tab Z
if wait_until 20 on_screen '\$ docker flame --colors java Z$'; then ok "--colors ja<Tab> completes to java"; else
    nok "--colors ja<Tab> completes to java"; fdiag "$(screen)"; fi
tm send-keys -t sh C-u "docker flame top ${tag}-j" Tab Z
if wait_until 20 on_screen "top ${tag}-jvm Z\$"; then ok "top <prefix><Tab>: the one container, completed"; else
    nok "top <prefix><Tab>: the one container, completed"; fdiag "$(screen)"; fi
tm kill-session -t sh

# Debian's bash script of CLI 20.10 (package docker.io), which runs the plugin itself
if [ -f /usr/share/bash-completion/completions/docker ]; then
    printf '%s\n' 'PS1="$ "' '. /usr/share/bash-completion/bash_completion' \
        '. /usr/share/bash-completion/completions/docker' 'echo RC-READY' >rc20.bash
    tm new-session -d -x 200 -y 50 -s sh "bash --noprofile --rcfile $TMP/rc20.bash -i"
    wait_until 20 on_screen 'RC-READY' || nok "bash with Debian's script started"
    tm send-keys -t sh 'docker flame diff --format ' Tab Tab
    if wait_until 20 on_screen 'folded +pprof +svg'; then ok "Debian's script: diff --format <Tab><Tab>"; else
        nok "Debian's script: diff --format <Tab><Tab>"; fdiag "$(screen)"; fi
    tm send-keys -t sh C-u 'docker flame ' Tab Tab
    if wait_until 20 on_screen ' record ' && on_screen ' render ' && on_screen 'version'; then ok "Debian's script: docker flame <Tab><Tab>: the verbs"; else
        nok "Debian's script: docker flame <Tab><Tab>: the verbs"; fdiag "$(screen)"; fi
else
    skip_or_fail "no Debian docker bash completion script (package docker.io)"
fi
done_testing
