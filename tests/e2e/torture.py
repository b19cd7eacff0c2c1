#!/usr/bin/python3
"""torture.py — the torture test's driver: a seeded random schedule of concurrent matorage
commands against one store, then a checker of what the store must still hold.

Usage: torture.py --matorage BIN --store URL --phase NAME --seed N --seconds S --work DIR
                  --results FILE [--faults URL] [--workers N]

Workers, each one matorage process, started at random moments (at most N at once, default 5;
1 runs them one after another, to tell whether a failure needs concurrency):
  append  put log id=.. v=.. --append: rows whose int64 `id` column holds the append's own
          id range (op index * 100 + 0..n-1) and whose `v` column is derived from `id`
  put     put dsK x=POOL[j].npy: a few fixed files per dataset, so most puts re-put
          identical data (identical, content-addressed shards)
  rm      rm of a version: on `log` only one that is not among the two newest
  gc      gc --delete --grace 0, of the whole store or of one dataset
  read    verify, get or ls -l racing the writers
Any worker may be marked to be killed (SIGKILL) a random time after it starts.  With --faults
(the fault proxy's control URL) random 503/500/dropped/delayed/truncated S3 answers are
spread over the run.  The whole schedule, fault rules included, follows from seed and phase;
the interleaving follows the machine's speed, and every check holds for any interleaving.

Once every worker has ended (faults cleared), the checker asserts: every listed version
verifies and none is its own or a newer version's child; ls -l, gc (dry run, then --delete
with nothing running) and get of each latest work; every append that exited 0 has its rows in
log's latest (an append lists its parent's shards, so latest holds its whole lineage), each
append there whole, once, in order, with its values; other datasets' latest holds data a put
wrote; no process died by a signal but those killed on purpose; no sanitizer report and no
"database is locked" in any output; a worker's exit 1 comes with one clear line; none hung.

Each check writes "R<TAB>0<TAB>name" (pass) or "R<TAB>1<TAB>name" (fail) to the results file,
then for a failure what explains it as "D<TAB>text" lines; the run's course and schedule go
to stdout as "# " lines.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np

MAX_RUNNING = 5  # default of --workers
WORKER_TIMEOUT = 120.0  # seconds; a worker past it is killed and counted as hung
CHECK_TIMEOUT = 180.0
APPEND_STRIDE = 100  # ids of op i: i * APPEND_STRIDE + 0..n-1
OTHER = ["ds0", "ds1", "ds2"]
POOL = 3  # files per other dataset
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error")
LOCKED = "database is locked"


def say(text):
    for line in str(text).splitlines() or [""]:
        print("# " + line)
    sys.stdout.flush()


def v_of(ids):
    """The v column an append stores for these ids: exact in float64."""
    ids = np.asarray(ids, dtype=np.int64)
    return np.stack([ids * 0.5, -ids.astype(np.float64)], axis=1)


class Cmd:
    """One matorage process, its output in files (never a pipe that could fill up)."""
    all = []

    @classmethod
    def running(cls):
        return [c for c in cls.all if c.proc.poll() is None]

    def __init__(self, ctx, label, args):
        self.label, self.args = label, args
        base = os.path.join(ctx.logdir, "%04d" % len(ctx.cmds))
        self.out_path, self.err_path = base + ".out", base + ".err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([ctx.matorage, "-q"] + args, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, close_fds=True)
        self.started = time.monotonic()
        self.t0 = self.started - ctx.t0
        self.rc = None
        self.kill_sent = False
        self.hung = False
        ctx.cmds.append(self)
        Cmd.all.append(self)

    def poll(self):
        if self.rc is None:
            self.rc = self.proc.poll()
        return self.rc

    def kill(self):
        """SIGKILL; a process that already exited (a zombie not yet reaped) keeps its status."""
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.kill_sent = True
            except ProcessLookupError:
                pass

    def wait(self, timeout):
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.hung = True
            self.kill()
            self.rc = self.proc.wait()
        return self.rc

    def out(self):
        with open(self.out_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def err(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def line(self):
        return "%s: matorage %s" % (self.label, " ".join(self.args))


class Op:
    """One scheduled worker: its kind, arguments and fate, drawn from its own seeded RNG."""

    def __init__(self, ctx, index):
        r = random.Random("%d/%s/%d" % (ctx.seed, ctx.phase, index))
        self.index, self.ctx = index, ctx
        self.gap = r.uniform(0.0, 0.04)
        self.kill_after = r.uniform(0.0, 0.3) if r.random() < 0.15 else None
        self.pick = r.random()
        self.probe = None
        self.cmd = None
        self.note = ""
        self.ids = None
        kind = r.choices(["append", "put", "rm", "gc", "read"], [35, 20, 15, 15, 15])[0]
        self.kind = kind
        if kind == "append":
            n = r.randint(1, 40)
            self.ids = np.arange(index * APPEND_STRIDE, index * APPEND_STRIDE + n, dtype=np.int64)
            idf, vf = ctx.data_file("a%d_id" % index), ctx.data_file("a%d_v" % index)
            np.save(idf, self.ids)
            np.save(vf, v_of(self.ids))
            self.args = ["put", "log", "id=" + idf, "v=" + vf, "--append", "--shard-rows", "16",
                         "--threads", "1"]
        elif kind == "put":
            ds = r.choice(OTHER)
            self.pool = r.randrange(POOL)
            self.args = ["put", ds, "x=" + ctx.pool_file(ds, self.pool), "--shard-rows", "32",
                         "--threads", "1"]
        elif kind == "rm":
            self.target = "log" if r.random() < 0.5 else r.choice(OTHER)
            self.args = None  # chosen when the probe (ls) has answered
        elif kind == "gc":
            self.args = ["gc", "--delete", "--grace", "0"]
            if r.random() < 0.5:
                self.args[1:1] = [r.choice(["log"] + OTHER)]
        else:
            ds = r.choice(["log"] + OTHER)
            self.args = r.choice([["verify", ds], ["get", ds, "id" if ds == "log" else "x",
                                  "-o", ctx.data_file("r%d" % index)], ["ls", "-l", ds],
                                  ["ls", "-l"]])

    def start(self):
        if self.kind == "rm":
            self.probe = Cmd(self.ctx, "op %d probe" % self.index, ["ls", self.target])
        else:
            self.cmd = Cmd(self.ctx, "op %d %s" % (self.index, self.kind), self.args)

    def step(self, now):
        """Advance; True once the op is over."""
        if self.probe is not None and self.cmd is None:
            if now - self.probe.started > WORKER_TIMEOUT:
                self.probe.hung = True
                self.probe.kill()
            if self.probe.poll() is None:
                return False
            versions = self.probe.out().split() if self.probe.rc == 0 else []
            if self.target == "log":
                versions = versions[:-2]  # never one of the two newest: rows would go
            if not versions:
                self.note = "nothing to remove"
                return True
            self.args = ["rm", "%s@%s" % (self.target, versions[int(self.pick * len(versions))])]
            self.cmd = Cmd(self.ctx, "op %d rm" % self.index, self.args)
            return False
        c = self.cmd
        if c.poll() is not None:
            return True
        age = now - c.started
        if self.kill_after is not None and age >= self.kill_after and not c.kill_sent:
            c.kill()
        if age > WORKER_TIMEOUT:
            c.hung = True
            c.kill()
        return False

    def describe(self):
        c = self.cmd
        if c is None:
            return "op %d %s %s: %s" % (self.index, self.kind, self.target, self.note)
        s = "op %d t=%.3fs %s" % (self.index, c.t0, " ".join(self.args).replace(
            self.ctx.datadir + "/", ""))
        if self.ids is not None:
            s += " (ids %d..%d)" % (self.ids[0], self.ids[-1])
        if self.kill_after is not None:
            s += " [kill at +%.3fs%s]" % (self.kill_after, ", sent" if c.kill_sent else ", missed")
        s += " -> rc %s" % c.rc
        out = c.out().strip()
        if out and c.args[0] == "put":
            s += " " + out.splitlines()[-1]
        return s


class Ctx:
    def __init__(self, a):
        self.matorage, self.store, self.phase, self.seed = a.matorage, a.store, a.phase, a.seed
        self.work, self.workers = a.work, a.workers
        self.logdir = os.path.join(a.work, "cmds")
        self.datadir = os.path.join(a.work, "data")
        os.makedirs(self.logdir, exist_ok=True)
        os.makedirs(self.datadir, exist_ok=True)
        self.cmds = []
        self.results = open(a.results, "a")
        self.failed = 0
        self.t0 = time.monotonic()
        os.environ["MATORAGE_STORE"] = a.store
        for ds in OTHER:
            for j in range(POOL):
                rows = 120 + 40 * j
                x = np.random.default_rng([a.seed, OTHER.index(ds), j]).standard_normal(
                    (rows, 4)).astype(np.float32)
                np.save(self.pool_file(ds, j), x)

    def data_file(self, name):
        return os.path.join(self.datadir, name + ".npy")

    def pool_file(self, ds, j):
        return os.path.join(self.datadir, "pool_%s_%d.npy" % (ds, j))

    def result(self, ok, name, detail=()):
        """One check: "R<TAB>0|1<TAB>name", then what explains a failure as "D<TAB>line"s."""
        self.results.write("R\t%d\t%s: %s\n" % (0 if ok else 1, self.phase, name))
        if not ok:
            self.failed += 1
            for d in detail:
                for line in str(d).splitlines():
                    self.results.write("D\t%s\n" % line)
        self.results.flush()

    def run(self, args, timeout=CHECK_TIMEOUT):
        """A checker command, run to its end: (rc, stdout, stderr)."""
        c = Cmd(self, "check", args)
        c.wait(timeout)
        return c.rc, c.out(), c.err()


def fault_rules(seed, phase, seconds):
    """Faults at a low rate over the S3 requests, each firing once at the (after+1)-th request
    its pattern matches: about one request in GAP fails or is delayed; retries absorb them."""
    r = random.Random("%d/%s/faults" % (seed, phase))
    rules = []
    any_req = "^(GET|PUT|HEAD|DELETE|POST) "
    for match, actions, gap, span in [
            (any_req, ["503", "503", "500", "drop", "delay"], 60, 300 * seconds),
            ("^GET .*/shards/", ["truncate", "corrupt"], 40, 60 * seconds),
            ("^PUT .*/versions/", ["503", "drop"], 8, 8 * seconds),
            ("^DELETE ", ["503", "drop"], 10, 20 * seconds)]:
        after = 0
        while True:
            after += 1 + int(r.expovariate(1.0 / gap))
            if after >= span:
                break
            rule = {"match": match, "action": r.choice(actions), "count": 1, "after": after}
            if rule["action"] == "delay":
                rule["delay_ms"] = r.randint(100, 800)
            rules.append(rule)
    return rules


def control(url, method, body=None):
    req = urllib.request.Request(url, data=body, method=method)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def load(ctx, seconds, faults):
    """Start ops on schedule until `seconds` have passed, then let the running ones end."""
    if faults:
        rules = fault_rules(ctx.seed, ctx.phase, seconds)
        control(faults + "/__faults", "POST", json.dumps({"rules": rules}).encode())
        say("%d S3 fault rules armed" % len(rules))
    ops, running = [], []
    index = 1
    nxt = Op(ctx, index)
    next_at = time.monotonic() + nxt.gap
    deadline = ctx.t0 + seconds
    try:
        while True:
            now = time.monotonic()
            running = [op for op in running if not op.step(now)]
            if now < deadline:
                if now >= next_at and len(running) < ctx.workers:
                    nxt.start()
                    ops.append(nxt)
                    running.append(nxt)
                    index += 1
                    nxt = Op(ctx, index)
                    next_at = now + nxt.gap
            elif not running:
                break
            time.sleep(0.005)  # polling interval only: no outcome depends on it
    finally:
        for op in running:  # only on an exception: leave nothing behind
            for c in (op.probe, op.cmd):
                if c is not None and c.poll() is None:
                    c.kill()
                    c.wait(30)
        if faults:
            left = json.loads(control(faults + "/__faults", "GET"))
            control(faults + "/__faults", "DELETE")
            seen = control(faults + "/__log", "GET").decode().splitlines()
            hit = [ln for ln in seen if re.search(r" (503|500|drop|truncated|corrupted)$", ln)]
            say("%d S3 requests, %d answered with a fault; %d rules left unfired" % (
                len(seen), len(hit), len(left)))
    return ops


def parse_ls_long(text):
    """`ls -l DATASET`: [(version, parent)] oldest first."""
    return [(f[0], f[-1]) for f in (line.split() for line in text.splitlines()[1:]) if f]


def vnum(v):
    m = re.fullmatch(r"v(\d+)", v)
    return int(m.group(1)) if m else None


def verify_all(ctx, versions):
    """verify DATASET@VERSION for each, three at a time: the failures, and per version the
    sha256 of the shards it reported damaged or missing."""
    bad, shas, queue, running = [], {}, list(versions), []
    while queue or running:
        while queue and len(running) < 3:
            dv = queue.pop(0)
            running.append((dv, Cmd(ctx, "check", ["verify", dv])))
        dv, c = running.pop(0)
        c.wait(CHECK_TIMEOUT)
        if c.rc != 0:
            lines = (c.err() + c.out()).splitlines()
            first = next((ln for ln in lines if "BAD" in ln or "matorage:" in ln), "")
            summary = lines[-1] if lines else ""
            bad.append("verify %s: exit %s: %s%s" % (dv, c.rc, first.strip()[:300],
                                                     "" if summary == first else
                                                     " ... " + summary.strip()[:200]))
            shas[dv] = set(re.findall(r"BAD shard \d+ ([0-9a-f]{64})", c.out()))
    return bad, shas


def shorten(bad):
    """At most ten failures in full, then the names of the rest."""
    if len(bad) <= 12:
        return bad
    return bad[:10] + ["... and %d more: %s" % (len(bad) - 10, ", ".join(
        b.split(":")[0][len("verify "):] for b in bad[10:]))]


def check_appends(ctx, ops, ids, vals):
    """Every append that exited 0 is in latest, whole, once, in order, with its values.
    ids holds -1 for rows that could not be read (their shard is missing or damaged)."""
    appends = [op for op in ops if op.kind == "append"]
    committed = [op for op in appends if op.cmd.rc == 0]
    unreadable = int(np.count_nonzero(ids < 0))
    pos, dup = {}, []
    for k, i in enumerate(ids.tolist()):
        if i < 0:
            continue
        if i in pos:
            dup.append(i)
        pos[i] = k
    missing = {}
    for op in [ctx.initial] + committed:
        lost = [i for i in op.ids.tolist() if i not in pos]
        if lost:
            missing[op.index] = (op, lost)
    n_lost = sum(len(v[1]) for v in missing.values())
    ctx.result(not missing, "every append that exited 0 (%d of %d) and the first version have "
               "their rows in latest" % (len(committed), len(appends)),
               ["%d rows of %d appends that exited 0 are not in latest%s" % (
                   n_lost, len(missing), "" if not unreadable else
                   " (%d of latest's rows are unreadable: some may be there)" % unreadable)] +
               ["op %d (printed %s): missing ids %s" % (k, op.cmd.out().strip(), compact(lost))
                for k, (op, lost) in sorted(missing.items())])
    ctx.result(not dup, "no row of latest appears twice", ["duplicated ids: " + compact(dup)])
    by_op = {op.index: op for op in appends}
    by_op[0] = ctx.initial
    torn, unknown = [], []
    for opi in sorted({i // APPEND_STRIDE for i in pos}):
        op = by_op.get(opi)
        if op is None:
            unknown.append(opi)
            continue
        where = [pos[i] for i in op.ids.tolist() if i in pos]
        # Rows of one append are consecutive, in order; only unreadable rows may hide some.
        span = ids[where[0]:where[-1] + 1]
        ours = np.isin(span, op.ids) | (span < 0)
        if where != sorted(where) or not ours.all() or \
                (len(where) < len(op.ids) and not unreadable):
            torn.append("op %d: ids %s at rows %s" % (opi, compact(op.ids.tolist()),
                                                       compact(where)))
    ctx.result(not torn and not unknown,
               "each append in latest is whole and in order, and no row comes from nowhere",
               torn + ["ids of no append: op %d" % u for u in unknown])
    ok_rows = ids >= 0
    wrong = np.nonzero(ok_rows & ~np.all(vals == v_of(np.maximum(ids, 0)), axis=1))[0]
    ctx.result(len(wrong) == 0, "latest's v column matches its ids (%d rows)" % len(ids),
               ["row %d: id %d v %s" % (k, ids[k], vals[k]) for k in list(wrong)[:20]])
    failed = [op for op in appends if op.cmd.rc not in (0, None) and not killed(op.cmd)]
    present = [op.index for op in failed if any(i in pos for i in op.ids.tolist())]
    if present:
        say("note: appends that exited non-zero but whose rows are in latest: %s" % present)


def compact(ids):
    """Runs of consecutive ints as a..b."""
    out, ids = [], sorted(ids)
    k = 0
    while k < len(ids):
        j = k
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[k]) if j == k else "%d..%d" % (ids[k], ids[j]))
        k = j + 1
    return ", ".join(out)


def killed(c):
    return c.kill_sent and c.rc == -signal.SIGKILL


def clear_failure(c):
    """Exit 1 with one clear line on stderr; verify may instead report damage on stdout."""
    lines = [ln for ln in c.err().splitlines() if ln.strip()]
    if len(lines) == 1 and lines[0].startswith("matorage: "):
        return True
    # verify's count line is followed by the version's state (repairable or not, and from
    # what) unless finding that out failed too.
    out = c.out().strip().splitlines()
    if c.args[0] != "verify" or lines or not out:
        return False
    state = r"\S+@v\d+: (damaged, (repairable from|unrepairable: lost) |sound when read again|damaged; whether).*"
    if re.fullmatch(state, out[-1]):
        out = out[:-1]
    return bool(out) and re.fullmatch(r"\d+ shards? verified, \d+ damaged", out[-1]) is not None


def check_processes(ctx):
    """Signals, sanitizer reports, 'database is locked', hangs, unclear errors."""
    died, sanitizer, locked, unclear, hung, errors, warnings = [], [], [], [], [], [], []
    for c in ctx.cmds:
        err, out = c.err(), c.out()
        if c.hung:
            hung.append("%s (past %ds)" % (c.line(), WORKER_TIMEOUT))
        elif not killed(c) and (c.rc < 0 or c.rc >= 128):
            died.append("%s: exit %d%s\n%s" % (c.line(), c.rc, " (signal %d)" % -c.rc
                                                 if c.rc < 0 else "", err[-2000:]))
        m = SANITIZER.search(err + out)
        if m:
            sanitizer.append("%s: exit %s, printed '%s':\n%s" % (c.line(), c.rc, m.group(0),
                                                               err[-3000:]))
        if LOCKED in err + out:
            locked.append("%s: %s" % (c.line(), next(ln for ln in (err + out).splitlines()
                                                     if LOCKED in ln)))
        # The checker's own commands are judged by the checks that ran them.
        if killed(c) or c.hung or c.label == "check":
            continue
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if c.rc == 1:
            said = [ln for ln in lines if ln.startswith("matorage: ")] or lines or \
                out.strip().splitlines() or [""]
            errors.append("%s: %s" % (c.label, said[0]))
            if not clear_failure(c):
                unclear.append("%s: exit 1 with stderr:\n%s\nand stdout ending:\n%s" % (
                    c.line(), err[-2000:], out[-1000:]))
        elif 1 < c.rc < 128:
            unclear.append("%s: exit %d with stderr:\n%s" % (c.line(), c.rc, err[-2000:]))
        elif c.rc == 0 and lines:
            warnings.append("%s: exit 0, stderr: %s" % (c.label, " | ".join(lines)[:300]))
    ctx.result(not died, "no process died by a signal but those killed on purpose", died)
    ctx.result(not sanitizer, "no sanitizer report in any output", sanitizer)
    ctx.result(not locked, "no command printed '%s' (%d did)" % (LOCKED, len(locked)), locked)
    ctx.result(not unclear, "every worker's failure (exit 1) is one clear line", unclear)
    ctx.result(not hung, "no command hung", hung)
    if errors:
        say("%d workers exited 1 (allowed with one clear line):" % len(errors))
        for e in errors:
            say("  " + e[:400])
    for w in warnings:
        say("  " + w)


def check_store(ctx, ops):
    """After the load: the store reads, verifies and collects as a quiet store must."""
    rc, out, err = ctx.run(["ls"])
    ctx.result(rc == 0, "ls lists the datasets", [err])
    datasets = out.split()
    versions, parents_bad, latest = [], [], {}
    for ds in datasets:
        rc, out, err = ctx.run(["ls", "-l", ds])
        if rc != 0:
            parents_bad.append("ls -l %s: exit %d: %s" % (ds, rc, err.strip()))
            continue
        rows = parse_ls_long(out)
        if rows:
            latest[ds] = rows[-1][0]
        for v, p in rows:
            versions.append("%s@%s" % (ds, v))
            if p == v or (vnum(p) is not None and vnum(v) is not None and vnum(p) >= vnum(v)):
                parents_bad.append("%s@%s lists %s as its parent" % (ds, v, p))
    say("datasets after the load: " + ", ".join(
        "%s (latest %s)" % (d, latest.get(d, "-")) for d in datasets))
    ctx.result("log" in latest and not parents_bad,
               "ls -l of each dataset; no version is its own or a newer version's child",
               parents_bad + ([] if "log" in latest else ["no version of log is listed"]))
    bad, bad_shards = verify_all(ctx, versions)
    ctx.result(not bad, "every listed version verifies (%d versions)" % len(versions),
               shorten(bad))
    rc, out, err = ctx.run(["ls", "-l"])
    ctx.result(rc == 0, "ls -l of the store", [err])
    rc, err = run_gc(ctx, ["gc", "--grace", "0"])
    ctx.result(rc == 0, "gc dry run", [err])

    manifest = log_manifest(ctx, latest)
    if manifest is not None:
        dv = "log@" + latest["log"]
        ids, vals = read_log(ctx, dv, manifest, bad_shards.get(dv, set()))
    else:  # nothing to read: every append counts as lost
        ids, vals = np.zeros(0, dtype=np.int64), np.zeros((0, 2))
    check_appends(ctx, ops, ids, vals)
    wrong = []
    for ds in OTHER:
        if ds not in latest:
            continue
        path = ctx.data_file("check_" + ds)
        rc, out, err = ctx.run(["get", "%s@%s" % (ds, latest[ds]), "x", "-o", path])
        if rc != 0:
            wrong.append("get %s x: exit %d: %s" % (ds, rc, err.strip()))
            continue
        x = np.load(path)
        if not any(np.array_equal(x, np.load(ctx.pool_file(ds, j))) for j in range(POOL)):
            wrong.append("%s@%s holds data no put wrote (shape %s)" % (ds, latest[ds], x.shape))
    ctx.result(not wrong, "get of each other dataset's latest returns data a put wrote", wrong)

    # A final collection with nothing running must leave every version as it was.
    rc, err = run_gc(ctx, ["gc", "--delete", "--grace", "0"])
    ctx.result(rc == 0, "gc --delete --grace 0 with nothing running", [err])
    before = set(b.split(":")[0] for b in bad)
    after, _ = verify_all(ctx, ["%s@%s" % kv for kv in sorted(latest.items())])
    newly = [b for b in after if b.split(":")[0] not in before]
    ctx.result(not newly, "after it each latest still verifies if it did before",
               shorten(newly))
    if len(ids) and not (ids < 0).any():
        rc, _, err = ctx.run(["get", "log@" + latest["log"], "id", "-o",
                              ctx.data_file("check_log_after")])
        same = rc == 0 and np.array_equal(np.load(ctx.data_file("check_log_after")), ids)
        ctx.result(same, "and log's latest reads the same rows", [err])
    else:
        ctx.result(True, "and log's latest reads the same rows # SKIP it was not whole before")


def run_gc(ctx, args):
    """gc with nothing running; a lock left by a worker killed in the last moments of the
    load may still be live: then once more after it has expired (MATORAGE_LOCK_TTL)."""
    rc, _, err = ctx.run(args)
    if rc == 1:
        say("%s: %s; once more after the lock expiry" % (" ".join(args),
                                                           (err.strip().splitlines() or [""])[0]))
        time.sleep(float(os.environ.get("MATORAGE_LOCK_TTL", "120")) + 1)
        rc, _, err = ctx.run(args)
    return rc, err


def get_rows(ctx, dv, attr, lo, hi):
    path = ctx.data_file("rows")
    rc, _, err = ctx.run(["get", dv, attr, "--rows", "%d:%d" % (lo, hi), "-o", path])
    return np.load(path) if rc == 0 else None


def log_manifest(ctx, latest):
    """The manifest of log's latest version (info --json), or None after a failed check."""
    if "log" not in latest:
        ctx.result(False, "get of log's latest", ["log lists no version"])
        return None
    rc, out, err = ctx.run(["info", "log@" + latest["log"], "--json"])
    try:
        manifest = json.loads(out)
        int(manifest["rows"])
        return manifest
    except (ValueError, KeyError, TypeError):
        ctx.result(False, "get of log's latest", ["info --json: exit %d: %s%s" % (
            rc, err.strip(), out[:300])])
        return None


def shard_ranges(manifest, bad):
    """The version's rows cut at its shards: [(lo, hi, ok)], ok False for a shard verify
    reported; single rows when the manifest does not say where its shards begin."""
    n = int(manifest["rows"])
    try:
        units = [(int(sh["first_row"]), int(sh["first_row"]) + int(sh["rows"]),
                  sh.get("sha256") not in bad) for sh in manifest["shards"]]
        if units and units[0][0] == 0 and units[-1][1] == n and \
                all(u[1] == v[0] for u, v in zip(units, units[1:])):
            return units
    except (ValueError, KeyError, TypeError):
        pass
    return [(k, k + 1, True) for k in range(n)]


def read_log(ctx, dv, manifest, bad):
    """log's rows (id, v) as far as they can be read.  A whole version is one get per
    attribute; where shards are missing or damaged, the runs of the others are read, and a
    run that still fails is halved down to single shards.  Unread rows get id -1."""
    n = int(manifest["rows"])
    ids = np.full(n, -1, dtype=np.int64)
    vals = np.full((n, 2), np.nan)
    whole_id, whole_v = get_rows(ctx, dv, "id", 0, n), get_rows(ctx, dv, "v", 0, n)
    if whole_id is not None and whole_v is not None and whole_id.shape == (n,) and \
            whole_v.shape == (n, 2):
        ctx.result(True, "get of log's latest (%s, %d rows)" % (dv, n))
        return whole_id, whole_v
    units = shard_ranges(manifest, bad)
    todo, run, calls = [], [], 2
    for u in units + [(n, n, False)]:  # runs of shards verify did not report
        if u[2]:
            run.append(u)
        elif run:
            todo.append(run)
            run = []
    while todo:
        run = todo.pop()
        lo, hi = run[0][0], run[-1][1]
        got_id, got_v = get_rows(ctx, dv, "id", lo, hi), get_rows(ctx, dv, "v", lo, hi)
        calls += 2
        if got_id is not None and got_v is not None and got_id.shape == (hi - lo,) and \
                got_v.shape == (hi - lo, 2):
            ids[lo:hi], vals[lo:hi] = got_id, got_v
        elif len(run) > 1 and calls < 200:
            todo += [run[len(run) // 2:], run[:len(run) // 2]]
    unread = int(np.count_nonzero(ids < 0))
    ctx.result(False, "get of log's latest (%s, %d rows)" % (dv, n),
               ["it fails; %d of its rows cannot be read (%d gets to find them)" % (unread,
                                                                                     calls)])
    return ids, vals


def main():
    p = argparse.ArgumentParser()
    for a in ["matorage", "store", "phase", "work", "results", "faults"]:
        p.add_argument("--" + a)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--workers", type=int, default=MAX_RUNNING)
    a = p.parse_args()
    ctx = Ctx(a)
    say("%s store %s, seed %d, %gs of load, at most %d workers at once" % (
        a.phase, a.store, a.seed, a.seconds, a.workers))

    # The appended dataset's first version: ids 0..49 (op 0).
    init = Op.__new__(Op)
    init.index, init.kind, init.ids = 0, "append", np.arange(50, dtype=np.int64)
    np.save(ctx.data_file("a0_id"), init.ids)
    np.save(ctx.data_file("a0_v"), v_of(init.ids))
    init.cmd = Cmd(ctx, "op 0 put", ["put", "log", "id=" + ctx.data_file("a0_id"),
                                     "v=" + ctx.data_file("a0_v"), "--shard-rows", "16"])
    rc = init.cmd.wait(CHECK_TIMEOUT)
    ctx.result(rc == 0, "the appended dataset's first version", [init.cmd.err()])
    if rc != 0:
        return 1
    ctx.initial = init
    ctx.t0 = time.monotonic()
    ops = load(ctx, a.seconds, a.faults)
    kinds = {}
    for op in ops:
        kinds[op.kind] = kinds.get(op.kind, 0) + 1
    sent = sum(1 for op in ops if op.cmd is not None and killed(op.cmd))
    say("%d ops in %.1fs (%s); %d killed on purpose mid-run" % (
        len(ops), time.monotonic() - ctx.t0,
        ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())), sent))
    t = time.monotonic()
    check_store(ctx, ops)
    check_processes(ctx)
    say("checks took %.1fs" % (time.monotonic() - t))
    say("schedule (reproduce with MT_TORTURE_SEED=%d; the interleaving follows machine speed):"
        % a.seed)
    for op in ops:
        say("  " + op.describe())
    return 0


def stop(signum, frame):
    sys.exit(128 + signum)


if __name__ == "__main__":
    # Killed by the test's time limit: the finally below still ends every child.
    signal.signal(signal.SIGTERM, stop)
    try:
        sys.exit(main())
    finally:
        for c in Cmd.running():
            c.kill()
            c.proc.wait()
