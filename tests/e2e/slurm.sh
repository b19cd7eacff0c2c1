#!/bin/bash
# slurm.sh — examples/slurm submitted as a user would to a real one-node Slurm cluster (Debian's slurmctld, slurmd and munge, started here on loopback): an array job of more parts than the node has CPUs and the commit job that depends on it make the version one whole run makes; a request above the node is reported with its pending reason, a requeued task keeps its staged part, a failed part cancels the commit.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
EX=$(cd "$top_srcdir/examples" && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP not root: slurmd runs each job as its user"
	exit 0
fi
for b in munged mungekey slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
	if ! command -v "$b" > /dev/null; then
		echo "1..0 # SKIP $b not installed (scripts/install-deps.sh: slurmctld slurmd slurm-client munge)"
		exit 0
	fi
done

# Everything lives under $WORK/slurm; only the daemons started here are stopped, by PID.  No
# variable of an enclosing Slurm job (or a user's sbatch defaults) reaches this cluster.
unset $(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN|SQUEUE|SINFO|SCONTROL)_')
SD=$WORK/slurm
export SLURM_CONF=$SD/slurm.conf
SLURM_PIDS=()
MUNGE_PID=

# slurm_reap PID: wait for a daemon told to stop, killing it after 10 s.
slurm_reap() {
	for _ in $(seq 100); do
		kill -0 "$1" 2> /dev/null || break
		sleep 0.1
	done
	kill -9 "$1" 2> /dev/null
	wait "$1" 2> /dev/null
}

# slurm_down: cancel what is left of this cluster's jobs (their steps outlive slurmd), then
# stop slurmd and slurmctld.
slurm_down() {
	local p
	if [ ${#SLURM_PIDS[@]} -gt 0 ] && [ -n "$(squeue -h -o %i 2> /dev/null)" ]; then
		scancel --full $(squeue -h -o %A | sort -u) 2> /dev/null
		for _ in $(seq 50); do
			[ -z "$(squeue -h -o %i 2> /dev/null)" ] && break
			sleep 0.2
		done
	fi
	for p in "${SLURM_PIDS[@]}"; do kill "$p" 2> /dev/null; done
	for p in "${SLURM_PIDS[@]}"; do slurm_reap "$p"; done
	SLURM_PIDS=()
}
slurm_cleanup() {
	slurm_down
	if [ -n "$MUNGE_PID" ]; then
		kill "$MUNGE_PID" 2> /dev/null
		slurm_reap "$MUNGE_PID"
	fi
	mt_cleanup
}
trap slurm_cleanup EXIT

# munge_start: a munge daemon with its own key and socket.  munged wants the socket's
# directories searchable by all, its key's directory private.
munge_start() {
	chmod 755 "$WORK"
	mkdir -p "$SD/munge/run" "$SD/munge/etc" "$SD/spool" "$SD/state" "$SD/log"
	chmod 755 "$SD" "$SD/munge" "$SD/munge/run"
	chmod 700 "$SD/munge/etc"
	mungekey --create --keyfile="$SD/munge/etc/munge.key" || return 1
	munged --foreground --socket="$SD/munge/run/munge.socket" --key-file="$SD/munge/etc/munge.key" \
		--pid-file="$SD/munge/run/munged.pid" --seed-file="$SD/munge/etc/munged.seed" \
		--log-file="$SD/log/munged.log" > "$SD/log/munged.out" 2>&1 &
	MUNGE_PID=$!
	for _ in $(seq 100); do
		[ -S "$SD/munge/run/munge.socket" ] && return 0
		kill -0 "$MUNGE_PID" 2> /dev/null || break
		sleep 0.1
	done
	tail -n 3 "$SD/log/munged.out" | sed 's/^/# munged: /'
	return 1
}

# slurm_conf CTLD_PORT SLURMD_PORT: the cluster's configuration; node mt1 is this machine as
# slurmd -C sees it (CPUs, sockets, cores, threads, memory), so slurmd registers it as it is.
# No cgroup plugin (processes tracked through /proc) and no accounting: it runs in a container.
slurm_conf() {
	cat << CONF
ClusterName=mttest
SlurmctldHost=localhost
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SD/munge/run/munge.socket
StateSaveLocation=$SD/state
SlurmdSpoolDir=$SD/spool
SlurmctldPidFile=$SD/slurmctld.pid
SlurmdPidFile=$SD/slurmd.pid
SlurmctldLogFile=$SD/log/slurmctld.log
SlurmdLogFile=$SD/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
NodeName=mt1 NodeAddr=127.0.0.1 $NODE State=UNKNOWN
PartitionName=mt Nodes=mt1 Default=YES MaxTime=INFINITE State=UP
CONF
}

# slurm_launch: slurmctld and slurmd on free ports, until the node is idle (at most 30 s);
# a daemon that exits (its port was taken meanwhile) fails the launch.
slurm_launch() {
	local p state
	slurm_conf "$(free_port)" "$(free_port)" > "$SLURM_CONF"
	slurmctld -D -f "$SLURM_CONF" > "$SD/log/slurmctld.out" 2>&1 &
	SLURM_PIDS+=($!)
	slurmd -D -N mt1 -f "$SLURM_CONF" > "$SD/log/slurmd.out" 2>&1 &
	SLURM_PIDS+=($!)
	for _ in $(seq 150); do
		for p in "${SLURM_PIDS[@]}"; do kill -0 "$p" 2> /dev/null || break 2; done
		state=$(sinfo -h -n mt1 -o %T 2> /dev/null)
		[ "$state" = idle ] && return 0
		sleep 0.2
	done
	tail -n 3 "$SD"/log/slurm*.log 2> /dev/null | sed 's/^/# /'
	echo "# node mt1: ${state:-no answer from slurmctld}"
	return 1
}

# slurm_wait SECONDS JOB...: until no job of these is pending or running.  Fails at once when
# one is pending for a reason Slurm never lifts by itself (its request exceeds the partition,
# a dependency that failed), else after SECONDS, printing squeue's view of them.
slurm_wait() {
	local limit=$1 jobs q stuck=0
	local end=$((SECONDS + limit))
	shift
	jobs=$(IFS=,; echo "$*")
	while :; do
		q=$(squeue -h -j "$jobs" -t pending,running,configuring,completing -o '%i %T %r' 2>&1) || {
			echo "# squeue: $q"
			return 1
		}
		[ -z "$q" ] && return 0
		# Seen in three polls in a row: not the moment before Slurm acts on it.
		if printf '%s\n' "$q" | grep -Eq ' PENDING (Partition|BadConstraints|DependencyNeverSatisfied|Invalid|ReqNodeNotAvail)'; then
			stuck=$((stuck + 1))
		else
			stuck=0
		fi
		if [ $stuck -ge 3 ]; then
			echo "# pending for ever (squeue: job state reason):"
			printf '%s\n' "$q" | sed 's/^/#   /'
			return 1
		fi
		if [ $SECONDS -ge $end ]; then
			echo "# still not done after $limit s (squeue: job state reason):"
			printf '%s\n' "$q" | sed 's/^/#   /'
			return 1
		fi
		sleep 0.5
	done
}

# job_states JOB: "TASK STATE REASON" for each task of an array job (TASK N/A for a plain job).
job_states() {
	scontrol -o show job "$1" | sed -n 's/.* ArrayTaskId=\([^ ]*\).* JobState=\([^ ]*\) Reason=\([^ ]*\).*/\1 \2 \3/p;
		/ArrayTaskId=/!s/.* JobState=\([^ ]*\) Reason=\([^ ]*\).*/N\/A \1 \2/p' | sort -n
}

# submit NAME N RECIPE [KEY=VALUE...]: examples/slurm/submit.sh as a user runs it; sets PARTS, COMMIT.
submit() {
	local name=$1 n=$2 recipe=$3 out
	shift 3
	out=$(bash "$EX/slurm/submit.sh" "$recipe" "$name" "$n" "$@" 2>&1)
	PARTS=$(printf '%s' "$out" | sed -n 's/^parts: job \([0-9]*\) .*commit: job \([0-9]*\),.*/\1/p')
	COMMIT=$(printf '%s' "$out" | sed -n 's/^parts: job \([0-9]*\) .*commit: job \([0-9]*\),.*/\2/p')
	[ -n "$PARTS" ] && [ -n "$COMMIT" ] || { printf '%s\n' "$out" | sed 's/^/# /'; return 1; }
}

# same A B: two versions hold the same rows of x and y.
same() {
	for a in x y; do
		$M get "$1" $a -o "$WORK/a.npy" > /dev/null && $M get "$2" $a -o "$WORK/b.npy" > /dev/null &&
			cmp -s "$WORK/a.npy" "$WORK/b.npy" || return 1
	done
}

# ---- the cluster ----
NODE=$(slurmd -C | sed -n '1s/^NodeName=[^ ]* //p')
CPUS=$(printf '%s' "$NODE" | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p')
started=1
if munge_start; then
	for try in 1 2 3; do
		slurm_launch && { started=0; break; }
		slurm_down
		[ "$try" -lt 3 ] && echo "# Slurm did not start; on other ports"
	done
fi
echo "# node mt1: $NODE"
ok $started "munged and a one-node Slurm cluster of $CPUS CPUs start on loopback"
[ $started -eq 0 ] || { echo "Bail out! no Slurm cluster"; exit 1; }

cd "$WORK" || exit 1
# The scripts call `matorage` by name, as on a cluster node; --export=ALL hands them this PATH.
mkdir -p bin
printf '#!/bin/sh\nexec %s "$@"\n' "$M" > bin/matorage
chmod +x bin/matorage
export PATH="$WORK/bin:$PATH"
check "the recipe run whole" $M run "$EX/parts/rows.lua" name=whole rows=1000

# ---- more parts than the node has CPUs: they run in waves, then the commit job ----
N=$((CPUS + 2))
submit slurm $N "$EX/parts/rows.lua" rows=1000
ok $? "submit.sh: array job $PARTS of $N parts on $CPUS CPUs, commit job $COMMIT after it"
t0=$SECONDS
slurm_wait 60 "$PARTS" "$COMMIT"
rc=$?
ok $rc "every task and the commit job leave the queue ($((SECONDS - t0)) s)"
[ $rc -eq 0 ] || { echo "Bail out! the example's jobs did not run: see squeue's reasons above"; exit 1; }
states=$(job_states "$PARTS")
want=$(for ((i = 0; i < N; i++)); do echo "$i COMPLETED None"; done)
ok $([ "$states" = "$want" ]; echo $?) "all $N array tasks completed"
[ "$states" = "$want" ] || printf '%s\n' "$states" | sed 's/^/#   /'
states=$(job_states "$COMMIT")
ok $([ "$states" = "N/A COMPLETED None" ]; echo $?) "the commit job completed"
[ "$states" = "N/A COMPLETED None" ] ||
	{ echo "#   $states"; tail -n 5 matorage-commit-"$COMMIT".out 2>&1 | sed 's/^/#   /'; }
staged=$(for ((i = 0; i < N; i++)); do cat "matorage-part-${PARTS}_$i.out"; done 2>&1)
want=$(for ((k = 1; k <= N; k++)); do echo "slurm@staged/slurm-$PARTS/$k"; done)
ok $([ "$staged" = "$want" ]; echo $?) "task i staged part i+1 of $N in staging slurm-$PARTS"
[ "$staged" = "$want" ] || printf '%s\n' "$staged" | sed 's/^/#   /'
ok $(grep -qsx "slurm@v1" matorage-commit-"$COMMIT".out; echo $?) "the commit job made slurm@v1"
check "slurm@v1 holds exactly the whole run's rows, in order" same whole slurm@v1
rows=$($M info slurm@v1 --json 2> /dev/null | $PY -c 'import json, sys; print(json.load(sys.stdin)["rows"])' 2> /dev/null)
ok $([ "$rows" = 1000 ]; echo $?) "slurm@v1 has 1000 rows ($rows)"

# ---- PART_CPUS above the node's CPUs: reported as never to run, with Slurm's reason ----
export PART_CPUS=$((CPUS + 1))
submit big 2 "$EX/parts/rows.lua" rows=10
unset PART_CPUS
t0=$SECONDS
out=$(slurm_wait 60 "$PARTS" "$COMMIT")
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "^#   ${PARTS}_\[0-1\] PENDING PartitionConfig$"
	echo $?) "PART_CPUS=$((CPUS + 1)): reported pending for ever, reason PartitionConfig ($((SECONDS - t0)) s)"
printf '%s\n' "$out"
scancel "$PARTS" "$COMMIT"

# ---- a task requeued after it staged its part (as after a node failure): its part stands ----
j=$(env RECIPE="$EX/parts/rows.lua" DATASET=requeued RECIPE_ARGS=rows=1000 \
	sbatch --parsable --array=0 "$EX/slurm/part.sbatch")
j=${j%%;*}
slurm_wait 60 "$j" > /dev/null
# Slurm holds a requeued job back (reason BeginTime) for a while; it may start at once here.
rq=$(scontrol requeue "${j}_0" 2>&1 && scontrol update JobId="${j}_0" StartTime=now 2>&1)
ok $? "scontrol requeue: the one task of array job $j, which completed, runs again"
[ -z "$rq" ] || echo "# $rq"
t0=$SECONDS
slurm_wait 60 "$j"
ok $? "the requeued task leaves the queue ($((SECONDS - t0)) s)"
states=$(job_states "$j")
ok $([ "$states" = "0 COMPLETED None" ] &&
	grep -q "^requeued@staged/slurm-$j/1 (staged before the requeue)$" "matorage-part-${j}_0.out"
	echo $?) "the task, run again, finds its part staged and succeeds"
[ "$states" = "0 COMPLETED None" ] || echo "#   $states"
tail -n 3 "matorage-part-${j}_0.out" | sed 's/^/#   /'
c=$(sbatch --parsable --export=ALL,PARTS_JOB="$j",DATASET=requeued "$EX/slurm/commit.sbatch")
slurm_wait 60 "${c%%;*}" > /dev/null
check "requeued@v1 holds exactly the whole run's rows, in order" same whole requeued@v1

# ---- a part that fails: the commit job is cancelled, no version, the part is named ----
cat > "$WORK/fails.lua" << 'LUA'
local m = require("matorage")
local k = m.part()
if k == 2 then error("part 2 fails on purpose") end
local w = m.create(arg.name, { attributes = { { name = "y", dtype = "int64" } } })
w:append({ y = m.arange(k, k) })
w:commit()
LUA
submit broken 2 "$WORK/fails.lua"
ok $? "submit.sh: array job $PARTS of 2 parts, part 2 failing, commit job $COMMIT"
t0=$SECONDS
slurm_wait 60 "$PARTS" "$COMMIT"
rc=$?
ok $rc "every task and the commit job leave the queue ($((SECONDS - t0)) s)"
[ $rc -eq 0 ] || { echo "Bail out! the example's jobs did not end: see squeue's reasons above"; exit 1; }
states=$(job_states "$PARTS")
ok $([ "$states" = "$(printf '0 COMPLETED None\n1 FAILED NonZeroExitCode')" ]
	echo $?) "task 1 (part 2) failed, task 0 completed"
[ "$states" = "$(printf '0 COMPLETED None\n1 FAILED NonZeroExitCode')" ] ||
	printf '%s\n' "$states" | sed 's/^/#   /'
states=$(job_states "$COMMIT")
ok $([ "$states" = "N/A CANCELLED DependencyNeverSatisfied" ]; echo $?) \
	"the commit job is cancelled, not left pending for ever"
[ "$states" = "N/A CANCELLED DependencyNeverSatisfied" ] || echo "#   $states"
fails "no version of broken exists" 1 "broken" $M info broken
fails "commit --staged by hand names the missing part" 1 "part 2" \
	$M commit broken --staged --id "slurm-$PARTS"
done_testing
