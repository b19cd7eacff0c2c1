#!/bin/bash
# python-ckpt.sh — checkpoints from Python: exact resume of a torch model with Adam, nested state round trips, types kept (numpy, torch, a numpy RNG state), imported checkpoints, loading by step, dedup of unchanged tensors, async saves, keep, bad state refused with nothing committed; on the file store or (MT_TEST_STORE=s3) S3.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE

check "exact resume: a torch model with Adam saved, loaded into fresh objects, steps on bit for bit" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import torch
import matorage
url = sys.argv[1]
torch.manual_seed(0)
x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))

def build():
    m = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                            torch.nn.Linear(16, 3))
    return m, torch.optim.Adam(m.parameters(), lr=0.01)

def step(m, opt):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(m(x), y).backward()
    opt.step()

m, opt = build()
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
for _ in range(5):
    step(m, opt)
    sched.step()
v = matorage.save_checkpoint(url, "mlp", {"model": m.state_dict(), "optim": opt.state_dict(),
                                          "sched": sched.state_dict(),
                                          "rng": torch.get_rng_state(), "step": 5},
                             step=5, metadata={"metrics": {"loss": 0.5}, "tags": ["test"]})
assert v == "mlp@v1", v
step(m, opt)
want = [p.detach().clone() for p in m.parameters()]

m2, opt2 = build()
sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
st = matorage.load_checkpoint(url, "mlp")
m2.load_state_dict(st["model"])
opt2.load_state_dict(st["optim"])
sched2.load_state_dict(st["sched"])
torch.set_rng_state(st["rng"])
assert st["step"] == 5 and sched2.last_epoch == 5, (st["step"], sched2.last_epoch)
step(m2, opt2)
got = list(m2.parameters())
assert all(torch.equal(a, b) for a, b in zip(want, got)), "parameters differ after resume"
info = matorage.checkpoint_info(url, "mlp@v1")
assert info["meta"]["step"] == 5 and info["meta"]["metrics"] == {"loss": 0.5}, info["meta"]
PYEOF

check "nested state round trips: tuples, int keys, non-finite floats, bytes, None, numpy without torch" pymt - "$MATORAGE_STORE" <<'PYEOF'
import math
import sys
import numpy as np
import matorage
url = sys.argv[1]
state = {"a": (1, 2.5, "s", None, True), "b": {0: np.arange(6, dtype=np.int16).reshape(2, 3),
         7: [np.float32(1.5), b"\x00\xff"]}, "c": [float("nan"), float("inf")],
         "__odd": 1, "scalar": np.array(3.25), "empty": np.zeros((0, 4), np.uint8)}
for dt in matorage.DTYPES:
    state["d_" + dt] = (np.arange(12) % 2).astype(dt).reshape(3, 4)
v = matorage.save_checkpoint(url, "nested", state)
back = matorage.load_checkpoint(url, v, as_numpy=True)
assert back["a"] == (1, 2.5, "s", None, True), back["a"]
assert set(back["b"]) == {0, 7} and (back["b"][0] == state["b"][0]).all()
assert back["b"][0].dtype == np.int16 and back["b"][7] == [1.5, b"\x00\xff"], back["b"]
assert math.isnan(back["c"][0]) and back["c"][1] == math.inf and back["__odd"] == 1
assert back["scalar"].shape == () and back["scalar"] == 3.25 and back["empty"].shape == (0, 4)
for dt in matorage.DTYPES:
    a = back["d_" + dt]
    assert a.dtype == np.dtype(dt) and (a == state["d_" + dt]).all(), dt
assert matorage.list_checkpoints(url, "nested") == ["v1"]
assert "nested" in matorage.models(url)
PYEOF

check "a second save changing one small tensor stores only that tensor" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
rng = np.random.default_rng(1)
big = {f"w{i}": rng.standard_normal((256, 256)).astype(np.float32) for i in range(8)}
big["bias"] = np.zeros(16, np.float32)
matorage.save_checkpoint(url, "dedup", big)
big["bias"] = np.ones(16, np.float32)
matorage.save_checkpoint(url, "dedup", big)
a, b = matorage.checkpoint_info(url, "dedup@v1"), matorage.checkpoint_info(url, "dedup@v2")
old = {t["sha256"] for t in a["tensors"]}
new = [t for t in b["tensors"] if t["sha256"] not in old]
assert [t["key"] for t in new] == ["bias"], new
PYEOF
n1=$(obj_ls models/dedup/tensors/ | wc -l)
ok "$([ "$n1" -eq 10 ]; echo $?)" "the store holds 8 + 2 tensor objects for the two saves ($n1)"

check "an asynchronous save returns once tensors are copied: later changes do not reach it" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import torch
import matorage
url = sys.argv[1]
w = torch.arange(1 << 20, dtype=torch.float32)
h = matorage.save_checkpoint(url, "async", {"w": w, "n": np.arange(4)}, wait=False)
w.zero_()
assert h.wait(60) == "async@v1"
back = matorage.load_checkpoint(url, "async")
assert isinstance(back["w"], torch.Tensor) and back["w"][-1].item() == (1 << 20) - 1
PYEOF

check "keep=2 leaves the newest two checkpoints" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
for i in range(4):
    matorage.save_checkpoint(url, "kept", {"w": np.full(4, i)}, keep=2)
assert matorage.list_checkpoints(url, "kept") == ["v3", "v4"], matorage.list_checkpoints(url, "kept")
PYEOF

check "bad state is refused naming its key, and nothing is committed" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import torch
import matorage
url = sys.argv[1]
cases = [({"opt": {"hook": object()}}, "opt.hook"),
         ({"a.b": np.zeros(1), "a": {"b": np.ones(1)}}, "'a.b'"),
         ({"c": np.zeros(2, dtype=np.complex64)}, "complex64"),
         ({"k": {(1, 2): 3}}, "tuple")]
for state, needle in cases:
    try:
        matorage.save_checkpoint(url, "bad", state)
    except matorage.InvalidArgument as e:
        assert needle in str(e), (needle, str(e))
    else:
        raise AssertionError(f"{state!r} was accepted")
try:
    matorage.save_checkpoint(url, "bad", {}, step=-1)
    raise AssertionError("a negative step was accepted")
except matorage.InvalidArgument:
    pass
try:
    matorage.list_checkpoints(url, "bad")
    raise AssertionError("a checkpoint was committed")
except matorage.NotFound:
    pass
try:
    matorage.load_checkpoint(url, "nosuch@v1")
    raise AssertionError("a missing checkpoint loaded")
except matorage.NotFound as e:
    assert "nosuch" in str(e), str(e)
PYEOF

check "bfloat16 weights round-trip bit for bit, and export as safetensors BF16" pymt - "$MATORAGE_STORE" "$M" "$WORK/bf16.safetensors" <<'PYEOF'
import json, struct, subprocess, sys
import numpy as np
import torch
import matorage
url, m, out = sys.argv[1:4]
g = torch.Generator().manual_seed(5)
w = torch.randn(33, 17, generator=g).to(torch.bfloat16)
w[0, :3] = torch.tensor([float("inf"), float("-inf"), float("nan")])
assert matorage.save_checkpoint(url, "bf", {"w": w, "b": torch.ones(3, dtype=torch.bfloat16)}) == "bf@v1"
back = matorage.load_checkpoint(url, "bf")
assert back["w"].dtype == torch.bfloat16 and torch.equal(back["w"].view(torch.int16), w.view(torch.int16))
bits = matorage.load_checkpoint(url, "bf", as_numpy=True)["w"]
assert bits.dtype == np.uint16 and (bits == w.view(torch.int16).numpy().view(np.uint16)).all()
info = matorage.checkpoint_info(url, "bf")
assert [t["dtype"] for t in info["tensors"]] == ["bfloat16", "bfloat16"], info["tensors"]
subprocess.run([m, "model", "export", "bf", "-o", out], check=True)
raw = open(out, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
a, b = head["w"]["data_offsets"]
assert head["w"]["dtype"] == "BF16" and head["w"]["shape"] == [33, 17], head["w"]
assert raw[8 + n + a:8 + n + b] == w.view(torch.int16).numpy().tobytes()
PYEOF
check "bfloat16 safetensors import back" $M model import bf2 "$WORK/bf16.safetensors"
out=$($M model info bf2 2>&1)
ok "$(printf '%s' "$out" | grep -q bfloat16; echo $?)" "model info shows the imported tensors as bfloat16"
fails "a dataset attribute refuses bfloat16" 2 "bfloat16 is for model checkpoints only" \
	$M ingest bfds --attr x=bfloat16 --format jsonl </dev/null

check "a safetensors file with no matorage state, imported, loads from Python as its flat {key: tensor}" pymt - "$MATORAGE_STORE" "$M" "$WORK/plain.safetensors" <<'PYEOF'
import json, struct, subprocess, sys
import numpy as np
import torch
import matorage
url, m, path = sys.argv[1:4]
w, ids = np.arange(12, dtype=np.float32).reshape(3, 4), np.array([7, -1], np.int64)
head = json.dumps({"layer.w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
                   "ids": {"dtype": "I64", "shape": [2], "data_offsets": [48, 64]}}).encode()
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(head)) + head + w.tobytes() + ids.tobytes())
subprocess.run([m, "model", "import", "imp", path], check=True)
back = matorage.load_checkpoint(url, "imp")
assert isinstance(back, dict) and sorted(back) == ["ids", "layer.w"], back
assert isinstance(back["layer.w"], torch.Tensor) and torch.equal(back["layer.w"], torch.from_numpy(w))
assert back["ids"].dtype == torch.int64 and back["ids"].tolist() == [7, -1]
flat = matorage.load_checkpoint(url, "imp@v1", as_numpy=True)
assert flat["layer.w"].dtype == np.float32 and (flat["layer.w"] == w).all(), flat
PYEOF

check "types kept: numpy stays numpy and torch stays torch with their dtypes; a numpy RNG state resumes" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import torch
import matorage
url = sys.argv[1]
np.random.seed(1234)
np.random.random(5)
g = torch.Generator().manual_seed(7)
state = {"np": np.random.get_state(), "torch_rng": torch.get_rng_state(),
         "u16": np.arange(5, dtype=np.uint16), "u32": np.arange(6, dtype=np.uint32),
         "u64": np.arange(7, dtype=np.uint64) << np.uint64(40), "f16": np.ones(3, np.float16),
         "w": torch.randn(4, 3, generator=g), "i": torch.arange(5, dtype=torch.int64),
         "b": torch.ones(2, dtype=torch.bool), "bf": torch.ones(2, dtype=torch.bfloat16),
         "py": (3, 2.5, "s", [1, "x"]), "n": 7}
assert matorage.save_checkpoint(url, "types", state) == "types@v1"
want = np.random.random(8)
np.random.seed(0)
back = matorage.load_checkpoint(url, "types")
np.random.set_state(back["np"])
assert (np.random.random(8) == want).all(), "the numpy RNG does not resume"
assert back["np"][0] == "MT19937" and isinstance(back["np"], tuple), back["np"][:1]
for k in ("u16", "u32", "u64", "f16"):
    assert isinstance(back[k], np.ndarray) and back[k].dtype == state[k].dtype, (k, back[k])
    assert (back[k] == state[k]).all(), k
assert isinstance(back["np"][1], np.ndarray) and back["np"][1].dtype == np.uint32
for k in ("torch_rng", "w", "i", "b", "bf"):
    assert isinstance(back[k], torch.Tensor) and back[k].dtype == state[k].dtype, (k, back[k])
    assert torch.equal(back[k], state[k]), k
assert back["py"] == (3, 2.5, "s", [1, "x"]) and back["n"] == 7, (back["py"], back["n"])
meta = matorage.checkpoint_info(url, "types")["meta"]
assert sorted(meta["numpy_tensors"]) == ["f16", "np.1", "u16", "u32", "u64"], meta
# as_numpy=True: all numpy; as_numpy=False: torch wherever torch has the dtype.
allnp = matorage.load_checkpoint(url, "types", as_numpy=True)
assert all(isinstance(allnp[k], np.ndarray) for k in ("w", "i", "u32", "torch_rng"))
allt = matorage.load_checkpoint(url, "types", as_numpy=False)
assert isinstance(allt["f16"], torch.Tensor) and isinstance(allt["np"][1], (np.ndarray, torch.Tensor))
try:
    matorage.save_checkpoint(url, "types", {}, metadata={"numpy_tensors": []})
    raise AssertionError("the reserved metadata member was accepted")
except matorage.InvalidArgument as e:
    assert "numpy_tensors" in str(e), str(e)
PYEOF

check "load_checkpoint(step=N) finds the newest checkpoint saved with that step; a missing step names those there are" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
for i, st in enumerate([10, 20, 20, 30]):
    matorage.save_checkpoint(url, "steps", {"i": i, "w": np.full(3, i)}, step=st)
matorage.save_checkpoint(url, "steps", {"i": 4})
assert matorage.load_checkpoint(url, "steps", step=10)["i"] == 0
assert matorage.load_checkpoint(url, "steps", step=20)["i"] == 2
assert (matorage.load_checkpoint(url, "steps", step=30)["w"] == 3).all()
try:
    matorage.load_checkpoint(url, "steps", step=25)
    raise AssertionError("step 25 loaded")
except matorage.NotFound as e:
    msg = str(e)
    assert "step 25" in msg and "10 (v1), 20 (v2), 20 (v3), 30 (v4)" in msg, msg
    print("#", msg)
for bad, exc in ((("steps@v1",), {"step": 10}), matorage.InvalidArgument), \
                 ((("steps",), {"step": -1}), matorage.InvalidArgument), \
                 ((("nosteps",), {"step": 1}), matorage.NotFound):
    try:
        matorage.load_checkpoint(url, *bad[0], **bad[1])
        raise AssertionError(f"{bad} loaded")
    except exc:
        pass
PYEOF

check "the command line sees what Python saved" $M model info mlp@v1
out=$($M model ls 2>&1)
ok "$(printf '%s' "$out" | grep -q mlp; echo $?)" "model ls lists mlp"

done_testing
