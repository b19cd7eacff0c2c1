#!/bin/bash
# python-torch.sh — matorage.TorchDataset under 2-rank gloo DDP (torch.multiprocessing.spawn) with 2 DataLoader workers each: every row once per epoch across ranks and workers, set_epoch through persistent workers, resume from state_dict, worker errors, transform, TorchMapDataset.
. "$(dirname "$0")/lib.sh"
# DataLoader workers are forked from a process with many threads (gloo's, torch's pools, the
# feeders of earlier DataLoaders).  GCC 12's AddressSanitizer runtime takes no lock around
# fork(), so a worker forked while another thread allocates can wait forever on the
# sanitizer allocator's lock (seen in about one run of six).  These checks run in the
# uninstrumented build (make distcheck); the library paths they drive run under the
# sanitizer in python-api.sh and python-loader.sh.
case "${MT_CFLAGS:-}" in *fsanitize=address*)
	echo "1..0 # SKIP DataLoader workers fork; the sanitizer runtime deadlocks such forks at random"
	exit 0 ;;
esac
M=$MATORAGE
if ! "$PY" -c 'import torch' 2> /dev/null; then
	echo "1..0 # SKIP python3-torch is not installed"
	exit 0
fi
"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
d = sys.argv[1]
np.save(f"{d}/id.npy", np.arange(4800, dtype=np.int64))
np.save(f"{d}/x.npy", np.random.default_rng(0).standard_normal((4800, 8)).astype(np.float32))
PYEOF
check "a dataset of 4800 rows" $M put tds id="$WORK/id.npy" x="$WORK/x.npy" --shard-rows 600

cat > "$WORK/ddp.py" <<'PYEOF'
import datetime
import os
import sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import matorage

URL, PORT, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
ROWS = 4800
OPTS = dict(attrs=["id", "x"], batch_rows=100, shuffle=True, seed=5, shuffle_rows=1200)


def epoch_ids(loader):
    return torch.cat([b["id"] for b in loader])


def gathered(ids):
    parts = [torch.zeros_like(ids) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, ids)
    return torch.cat(parts)


def run(rank, world):
    # A bounded wait: a rank that never comes (a port taken meanwhile) fails the test.
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{PORT}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=120))
    ds = matorage.TorchDataset(URL, "tds@v1", **OPTS)      # rank and world from torch.distributed
    assert (ds.rank, ds.world) == (rank, world), (ds.rank, ds.world)
    # Under mp.spawn, workers are spawned too (and pickle the dataset's shared state): this
    # DataLoader's; the later ones fork, which starts faster.
    dl = ds.dataloader(num_workers=2, persistent_workers=True)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    orders = []
    for epoch in range(2):
        ds.set_epoch(epoch)
        ids = []
        for b in dl:
            opt.zero_grad()
            model(b["x"]).pow(2).mean().backward()
            opt.step()
            ids.append(b["id"])
        ids = torch.cat(ids)
        assert len(ids) == ROWS // world and len(dl) == len(ds) == ROWS // world // 100, \
            (len(ids), len(dl))
        every = gathered(ids)
        assert sorted(every.tolist()) == list(range(ROWS)), f"epoch {epoch}: not every row once"
        orders.append(ids)
    assert not torch.equal(orders[0], orders[1]), "set_epoch did not reach persistent workers"
    # Resume: 7 batches of epoch 2, a state_dict, a fresh dataset and DataLoader go on.
    ds.set_epoch(2)
    full = epoch_ids(dl)
    ds.set_epoch(2)
    head = []
    for i, b in enumerate(dl):
        head.append(b["id"])
        if len(head) == 7:
            break
    state = ds.state_dict()
    assert state["batches"] == 7 and state["workers"] == 2, state
    ds2 = matorage.TorchDataset(URL, "tds@v1", **OPTS)
    ds2.load_state_dict(state)
    assert len(ds2) == len(ds) - 7
    dl2 = ds2.dataloader(num_workers=2, multiprocessing_context="fork")
    rest = epoch_ids(dl2)
    assert torch.equal(torch.cat(head + [rest]), full), "resumed rows differ"
    # And once more from the middle of the resumed epoch.
    ds2.load_state_dict(state)
    it = iter(dl2)
    more = [next(it)["id"] for _ in range(3)]
    state2 = ds2.state_dict()
    assert state2["batches"] == 10, state2
    ds3 = matorage.TorchDataset(URL, "tds@v1", **OPTS)
    ds3.load_state_dict(state2)
    rest3 = epoch_ids(ds3.dataloader(num_workers=2, multiprocessing_context="fork"))
    assert torch.equal(torch.cat(head + more + [rest3]), full), "second resume differs"
    gathered(full)
    with open(f"{OUT}.{rank}", "w") as f:
        f.write("ok\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2, join=True)
PYEOF
PORT=$(free_port)
check "2 ranks (gloo DDP, spawn) x 2 workers: every row once per epoch, set_epoch, resume" \
	pymt "$WORK/ddp.py" "$MATORAGE_STORE" "$PORT" "$WORK/ddp"
check "both ranks finished" test -f "$WORK/ddp.0" -a -f "$WORK/ddp.1"

# A loader (or a TorchMapDataset's) forked into a child mid-work: the child lets the
# inherited one go rather than close it (its threads are not there; a close hung or
# crashed there at random) and opens its own.  A child that hangs is killed by the alarm.
check "a loader inherited across fork is let go in the child, which opens its own (20 rounds)" \
	pymt - "$MATORAGE_STORE" <<'PYEOF'
import os
import signal
import sys
import matorage
url = sys.argv[1]
bad = []
for trial in range(20):
    parent = matorage.Loader(url, "tds", attrs=["id", "x"], batch_rows=1, prefetch_bytes=1 << 20)
    m = matorage.TorchMapDataset(url, "tds@v1", attrs=["id", "x"])
    assert m[17]["id"].item() == 17
    pids = []
    for w in range(2):
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)
            del parent
            ok = all(m[i]["id"].item() == i for i in range(w, 4800, 251))
            own = matorage.Loader(url, "tds", attrs=["id"], batch_rows=600)
            ok = ok and sum(len(b["id"]) for b in own) == 4800
            own.close()
            os._exit(0 if ok else 1)
        pids.append(pid)
    for p in pids:
        st = os.waitpid(p, 0)[1]
        if st:
            bad.append((trial, st))
    parent.close()
assert not bad, bad
PYEOF

# From one epoch to the next, an iteration's loader is kept and moved on with set_epoch (so it
# reads ahead into the epoch after), in the main process and in persistent workers; the rows
# and their order are still those of a loader opened at each epoch.
cat > "$WORK/kept.py" <<'PYEOF'
import sys
import torch
import matorage


def run(url):
    opts = dict(attrs=["id"], batch_rows=64, shuffle=True, seed=5, shuffle_rows=700)

    def fresh(epoch, rank=0, world=1):
        with matorage.Loader(url, "tds", rank=rank, world=world, epoch=epoch, **opts) as l:
            return torch.cat([torch.as_tensor(b["id"]) for b in l.batches()])

    ds = matorage.TorchDataset(url, "tds", rank=0, world=1, **opts)
    first = None
    for e in range(4):
        ds.set_epoch(e)
        got = torch.cat([b["id"] for b in ds])
        assert torch.equal(got, fresh(e)), f"epoch {e}: rows differ from a fresh loader's"
        if first is None:
            first = ds._kept[2]
        assert ds._kept[2] is first, f"epoch {e}: the loader was not kept"
    half = []  # an epoch left midway, then the next one whole
    for b in ds:
        half.append(b["id"])
        if len(half) == 3:
            break
    ds.set_epoch(4)
    assert torch.equal(torch.cat([b["id"] for b in ds]), fresh(4)), "after an epoch left midway"

    def epochs(dl, n):
        out = []
        for e in range(n):
            ds.set_epoch(e)
            out.append(torch.cat([b["id"] for b in dl]))
        return out

    kept = epochs(ds.dataloader(num_workers=2, persistent_workers=True,
                                multiprocessing_context="fork"), 4)
    new = epochs(ds.dataloader(num_workers=2, multiprocessing_context="fork"), 4)
    for e in range(4):
        assert sorted(kept[e].tolist()) == list(range(4800)), f"persistent epoch {e}"
        assert torch.equal(kept[e], new[e]), f"epoch {e}: persistent workers differ from new ones"
    # The dataset, holding its kept loader, still goes to spawned workers (they open their own).
    spawned = epochs(ds.dataloader(num_workers=2, multiprocessing_context="spawn"), 1)
    assert torch.equal(spawned[0], new[0]), "spawned workers differ"
    ds.close()
    assert ds._kept is None


if __name__ == "__main__":
    run(sys.argv[1])
PYEOF
check "epoch after epoch on a kept loader: main process, persistent workers, then spawned ones" \
	pymt "$WORK/kept.py" "$MATORAGE_STORE"

check "worker errors reach the parent as matorage errors; transform; setup errors; TorchMapDataset" \
	pymt - "$MATORAGE_STORE" <<'PYEOF'
import os
import sys
import torch
import matorage
url = sys.argv[1]

def double(batch):
    batch["twice"] = batch["id"] * 2
    return batch

ds = matorage.TorchDataset(url, "tds", attrs=["id"], batch_rows=64, transform=double,
                           rank=1, world=3)
n = 0
for b in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2):
    assert torch.equal(b["twice"], b["id"] * 2)
    n += len(b["id"])
assert n == 1600, n
for kw, env, words in (({}, {"WORLD_SIZE": "2"}, ["RANK"]), ({"rank": 1}, {}, ["both"]),
                       ({"rank": 2, "world": 2}, {}, ["rank 2"]),
                       ({"rank": 0, "world": 0}, {}, ["world"]),
                       ({"batch_rows": 0}, {}, ["batch_rows"]), ({"attrs": "id"}, {}, ["['id']"]),
                       ({"bogus": 1}, {}, ["bogus"]), ({"copy": False}, {}, ["copy", "copies"])):
    os.environ.update(env)
    try:
        matorage.TorchDataset(url, "tds", **kw)
        raise AssertionError(kw)
    except matorage.InvalidArgument as e:
        assert all(w in str(e) for w in words), (kw, str(e))
    for k in env:
        del os.environ[k]
try:
    matorage.TorchMapDataset(url, "tds", copy=False)
    raise AssertionError("TorchMapDataset took copy=False")
except matorage.InvalidArgument as e:
    assert "copy" in str(e), str(e)
# Without workers too, each batch's tensors are its own: later batches leave them as they were.
ds1 = matorage.TorchDataset(url, "tds", attrs=["id"], batch_rows=64, shuffle=True, seed=4,
                            rank=0, world=1)
kept = list(ds1)
again = [b["id"].clone() for b in ds1]
assert len(kept) == len(again) > 2 and all(torch.equal(a["id"], b) for a, b in zip(kept, again))
assert all(torch.equal(b["_rows"], b["id"]) for b in kept)  # id is the row number
os.environ.update(RANK="1", WORLD_SIZE="2")
assert matorage.TorchDataset(url, "tds").rank == 1
del os.environ["RANK"], os.environ["WORLD_SIZE"]
try:
    ds.dataloader(batch_size=4)
    raise AssertionError("batch_size")
except matorage.InvalidArgument as e:
    assert "batch_rows" in str(e)
# Resume with a plain DataLoader, telling state_dict how many batches were consumed.
ds = matorage.TorchDataset(url, "tds", attrs=["id"], batch_rows=100, shuffle=True, seed=2,
                           rank=0, world=1)
full = [b["id"] for b in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)]
head = []
iter_head = iter(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2))
for b in iter_head:
    head.append(b["id"])
    if len(head) == 5:
        break
state = ds.state_dict(5)
ds2 = matorage.TorchDataset(url, "tds", attrs=["id"], batch_rows=100, shuffle=True, seed=2,
                            rank=0, world=1)
ds2.load_state_dict(state)
rest = [b["id"] for b in torch.utils.data.DataLoader(ds2, batch_size=None, num_workers=2)]
assert torch.equal(torch.cat(head + rest), torch.cat(full)), "resume with state_dict(n)"
ds2.load_state_dict(state)
it = iter(torch.utils.data.DataLoader(ds2, batch_size=None, num_workers=1))
try:
    next(it)
    raise AssertionError("resumed with another number of workers")
except matorage.InvalidArgument as e:
    assert "2 DataLoader workers" in str(e) and "has 1" in str(e), str(e)
del it
# Between two workers' batches: only the same world and workers may resume; at an even
# step, any: the loader shares the rest among the new ranks and workers.
head.append(next(iter_head)["id"])
state = ds.state_dict(6)
rest = []
for rank in range(2):
    r = matorage.TorchDataset(url, "tds", attrs=["id"], batch_rows=100, shuffle=True, seed=2,
                              rank=rank, world=2)
    r.load_state_dict(state)
    assert r.state_dict()["batches"] == 6
    dl = r.dataloader(num_workers=2)
    assert len(dl) == 2 * 11, len(dl)    # 4200 rows left: 1050 a worker, 11 batches each
    got = []
    for b in dl:
        got.append(b["id"])
        if rank == 0 and len(got) == 4:
            st = r.state_dict()
            break
    if rank == 0:    # and from the middle of that, once more
        r2 = matorage.TorchDataset(url, "tds", attrs=["id"], batch_rows=100, shuffle=True,
                                   seed=2, rank=0, world=2)
        r2.load_state_dict(st)
        got += [b["id"] for b in r2.dataloader(num_workers=2)]
    rest += got
seen = torch.cat(head + rest).sort().values
assert torch.equal(seen, torch.arange(4800)), "elastic resume: every row once"
state = ds.state_dict(5)
for bad, words in (({**state, "world": 2}, ["world 2"]), ({**state, "version": "v9"}, ["v9"]),
                   ({**state, "batches": 10**6}, ["past the end"]), ({}, ["state_dict"])):
    try:
        ds2.load_state_dict(bad)
        raise AssertionError(bad)
    except matorage.InvalidArgument as e:
        assert all(w in str(e) for w in words), (bad, str(e))
del iter_head
m = matorage.TorchMapDataset(url, "tds@v1", attrs=["id", "x"])
assert len(m) == 4800 and m[17]["id"].item() == 17
seen = torch.cat([b["id"] for b in torch.utils.data.DataLoader(
    m, batch_size=200, shuffle=True, num_workers=2)])
assert sorted(seen.tolist()) == list(range(4800))
# Last: the DataLoader that failed is not reused.
def boom(batch):
    raise matorage.InvalidArgument("transform refused the batch", -2)

ds = matorage.TorchDataset(matorage.Store(url), "tds", attrs=["id"], batch_rows=64,
                           transform=boom)
it = iter(ds.dataloader(num_workers=2))
try:
    next(it)
    raise AssertionError("no error from the worker")
except matorage.InvalidArgument as e:
    assert "transform refused the batch" in str(e) and e.code == -2, str(e)
del it

print("ok")
PYEOF
done_testing
