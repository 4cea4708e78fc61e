/**
 * Environment variable that marks every process of one exec. Children inherit it, so a process
 * tree stays findable after its root exits or its members call `setsid` to leave the process
 * group; only a process that both scrubs its environment and leaves its parent escapes, which the
 * backend's hard reset (killing the container's init) still catches.
 */
export const TASK_ENV_KEY = 'TROUPE_TASK';

/**
 * POSIX sh (dash, busybox ash, bash) run inside the sandbox, as the sandbox user, with the task id
 * as `$1`: freezes (SIGSTOP) every process whose environment holds `TROUPE_TASK=<id>` and all their
 * descendants, rescanning until a pass finds nothing new (so a forking tree cannot outrun it), then
 * SIGKILLs them all. SIGSTOP/SIGKILL cannot be trapped or ignored. Prints `killed <pids>`.
 *
 * `/proc/<pid>/environ` is NUL-separated: `tr` turns it into lines because busybox grep stops
 * matching at the first NUL.
 */
export const KILL_TREE_SCRIPT = [
  'm="TROUPE_TASK=$1"',
  'self=$$',
  'known=" "',
  'pass=0',
  'while [ "$pass" -lt 64 ]; do',
  '  pass=$((pass + 1))',
  '  new=""',
  '  links=""',
  '  for d in /proc/[0-9]*; do',
  '    p=${d#/proc/}',
  '    [ "$p" = "$self" ] && continue',
  '    st=""',
  '    { read -r st < "$d/stat"; } 2>/dev/null || continue',
  '    rest=${st##*) }',
  '    set -- $rest',
  '    links="$links $p:$2"',
  '    case "$known" in *" $p "*) continue ;; esac',
  '    if { tr "\\000" "\\n" < "$d/environ"; } 2>/dev/null | grep -qxF "$m"; then',
  '      new="$new $p"; known="$known$p "',
  '    fi',
  '  done',
  '  grew=1',
  '  while [ "$grew" = 1 ]; do',
  '    grew=0',
  '    for l in $links; do',
  '      p=${l%%:*}; q=${l#*:}',
  '      case "$known" in *" $p "*) continue ;; esac',
  '      case "$known" in *" $q "*) new="$new $p"; known="$known$p "; grew=1 ;; esac',
  '    done',
  '  done',
  '  [ -z "$new" ] && break',
  '  kill -STOP $new 2>/dev/null',
  'done',
  'if [ "$known" != " " ]; then kill -KILL $known 2>/dev/null; fi',
  'echo "killed$known"',
].join('\n');
